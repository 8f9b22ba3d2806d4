package frontend_test

import (
	"testing"

	"conduit/app/apptest"
)

var env *apptest.Env

func TestMain(m *testing.M) { apptest.Main(m, &env) }
