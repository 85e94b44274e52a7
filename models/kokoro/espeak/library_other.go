//go:build !(linux || darwin || freebsd || netbsd)

package espeak

// statusOK is espeak-ng's ENS_OK.
const statusOK = 0

// library is empty where purego cannot load shared libraries.
type library struct{}

func load([]string) (*Engine, error)          { return nil, ErrUnsupported }
func (*library) setVoiceByName(string) uint32 { return 1 }
func (*library) statusMessage(uint32) string  { return "unsupported platform" }
func (*library) phonemes(string) ([]string, error) {
	return nil, ErrUnsupported
}
