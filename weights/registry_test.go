package weights_test

// The cache's tests (catalog_test.go, integrity_test.go, models_test.go,
// bench_test.go) run on the real artifacts, whose entries the model
// packages register: this test binary imports them all. Only the tests do;
// the weights package itself imports no model.
import _ "github.com/tensorforge/forge/models/all"
