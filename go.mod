module github.com/tensorforge/forge

go 1.26.8
