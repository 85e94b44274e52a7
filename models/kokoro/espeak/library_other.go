//go:build !(linux || darwin || freebsd || netbsd)

package espeak

// statusOK is espeak-ng's ENS_OK; traceIPA the IPA phoneme mode.
const (
	statusOK = 0
	traceIPA = 0x02
)

// library is empty where purego cannot load shared libraries.
type library struct{}

func load([]string) (*Engine, error)          { return nil, ErrUnsupported }
func (*library) setVoiceByName(string) uint32 { return 1 }
func (*library) statusMessage(uint32) string  { return "unsupported platform" }
func tieMode(rune) int32                      { return 0 }
func (*library) phonemes(string, int32) ([]string, error) {
	return nil, ErrUnsupported
}
