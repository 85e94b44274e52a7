package weights

import "testing"

func TestTranspose2D(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6} // [2,3]
	got := Transpose2D(src, 2, 3, 1)
	if want := []byte{1, 4, 2, 5, 3, 6}; string(got) != string(want) {
		t.Fatalf("Transpose2D = %v, want %v", got, want)
	}
}
