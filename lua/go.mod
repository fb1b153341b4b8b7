module github.com/boxoffice/boxoffice/lua

go 1.26

require github.com/yuin/gopher-lua v1.1.2
