module github.com/iket-trace/iket

go 1.26.8
