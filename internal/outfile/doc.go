// Package outfile writes an output file so that it is never left half
// written and never destroys what it must not: [Create] opens a temporary
// file beside the target, [File.Commit] renames it into place, and
// [File.Abort] removes the temporary file only. An error, a full disk or a
// signal therefore leaves either the old file or the new one.
//
// Create refuses a target that is the same file as one of the command's
// inputs (os.SameFile, so hard links and symlinks to an input count), a
// target that exists and is not a regular file (a directory, a device node,
// a FIFO), and a target that is a symbolic link: renaming over a link would
// replace the link, and writing through it would replace what it points at.
package outfile
