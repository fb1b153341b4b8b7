module github.com/boxoffice/boxoffice/lua

go 1.26
