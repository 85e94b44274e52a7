package all_test

import (
	"slices"
	"testing"

	_ "github.com/tensorforge/forge/models/all"
	"github.com/tensorforge/forge/weights"
)

// TestEveryCatalogIDRegistered: with every model package imported, the
// registered entries are exactly the catalog's ids.
func TestEveryCatalogIDRegistered(t *testing.T) {
	if got, want := weights.IDs(), weights.Catalog(); !slices.Equal(got, want) {
		t.Errorf("registered %v, catalog %v", got, want)
	}
}
