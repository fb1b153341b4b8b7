module github.com/boxoffice/boxoffice/services/slot-released-consumer

go 1.26

require (
	github.com/boxoffice/boxoffice/lua v0.0.0
	github.com/boxoffice/boxoffice/pkg v0.0.0
)

replace (
	github.com/boxoffice/boxoffice/lua => ../../lua
	github.com/boxoffice/boxoffice/pkg => ../../pkg
)
