package g2p

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// normalizeCases hold the output of kokoro-js 1.2.1's normalize_text (the
// function phonemize() applies first), run under node for each input.
var normalizeCases = []struct{ in, want string }{
	{"Dr. Smith paid $5.50 at 10:30 in 1990s.", "Doctor Smith paid 5 dollars and 50 cents at 10 30 in 19 90s."},
	{"Mr.Mrs. X", "MisterMrs. X"},
	{"It is 3.14 or .5; 1,000,000 people", "It is 3 point 1 4 or  point 5; 1000000 people"},
	{"yeah YEAH yea yeas", "ye'a Ye'a ye'a yeas"},
	{"$5 million and £1.01 or $1", "5 million dollars and 1 pound and 1 penny or 1 dollar"},
	{"e.g. this U.S.A. is", "e-g- this U-S-A- is"},
	{"CDs TVs X's X'S 1990S", "CD'S TV'S X's X's 1990 S"},
	{"DR. Who and Dr. who", "Doctor Who and Dr. who"},
	{"MR. Big, MS. Jones, MRS. Smith, Mr. and Ms. and Mrs.", "Mister Big, Miss Jones, Mrs Smith, Mister and Miss and Mrs"},
	{"etc. And etc. and ETC.", "etc. And etc. and etc"},
	{"10:00 1:05 12:59 13:00 0:30 1:60 2:30:00", "10 o'clock 1 oh 5 12 59 13:00 0:30 1:60 2:30:00"},
	{"1100 1099 2000 2005 2010 1905 1950s 12345", "11 hundred 1099 2000 2005 20 10 19 oh 5 19 50s 12345"},
	{"$5.505 and $0.1 and £2 and £1.01 and $5 Million and $5 millions and $3.50 hundred", "5 dollars and 505 cents and 0 dollars and 10 cents and 2 pounds and 1 pound and 1 penny and 5 Million dollars and 5 dollars millions and 3 point 5 0 hundred dollars"},
	{"3-4 and 1990-2000 and a-b", "3 to 4 and 19 90 to 2000 and a-b"},
	{"5S and 10S", "5 S and 10 S"},
	{"(parens) «guillemets» “curly” ‘single’", "«parens» \"guillemets\" \"curly\" 'single'"},
	{"中文、句子。感叹！逗号，冒号：分号；问号？", "中文, 句子. 感叹! 逗号, 冒号: 分号; 问号?"},
	{"tab\there\r\nand nbsp　ideographic", "tab here \nand nbsp ideographic"},
	{"a  b  c", "a b  c"},
	{"x\n  \ny", "x\n\ny"},
	{"  padded  ", "padded"},
	{"U.S.A. Is", "U-S-A. Is"},
	{"A.B. c", "A-B- c"},
	{"12.5.3", "12 point 5 point 3"},
	{".5.", "point 5."},
	{"$.5", "$ point 5"},
	{"1,2,3", "123"},
	{"The 1990's", "The 19 90's"},
	{"ABCs DVDs iPhones OKs XS BOXs", "ABC'S DVD'S iPhones OK'S XS BOX's"},
	{"yeahh yeah's", "yeahh ye'a's"},
}

func TestNormalizeMatchesKokoroJS(t *testing.T) {
	for _, c := range normalizeCases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestSplitNum(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1990", "19 90"}, {"1990s", "19 90s"}, {"1905", "19 oh 5"}, {"1900", "19 hundred"},
		{"2000", "2000"}, {"2005", "2005"}, {"2010", "20 10"}, {"1099", "1099"}, {"1100", "11 hundred"},
		{"3:00", "3 o'clock"}, {"3:05", "3 oh 5"}, {"12:30", "12 30"}, {"3.14", "3.14"},
	} {
		if got := splitNum(c.in); got != c.want {
			t.Errorf("splitNum(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFlipMoney(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"$1", "1 dollar"}, {"$5", "5 dollars"}, {"£1", "1 pound"}, {"£2", "2 pounds"},
		{"$1.01", "1 dollar and 1 cent"}, {"$5.5", "5 dollars and 50 cents"}, {"£3.01", "3 pounds and 1 penny"},
		{"£0.99", "0 pounds and 99 pence"}, {"$2 million", "2 million dollars"},
		// parseInt of a long fraction prints as JavaScript prints a double.
		{"$1.123456789012345678901", "1 dollar and 123456789012345680000 cents"},
		{"$1.123456789012345678901234567890", "1 dollar and 1.2345678901234568e+29 cents"},
	} {
		if got := flipMoney(c.in); got != c.want {
			t.Errorf("flipMoney(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSNumberString(t *testing.T) {
	// Values as node prints String(parseInt(s, 10)).
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"07", "7"}, {"9007199254740993", "9007199254740992"},
		{"12345678901234567890", "12345678901234567000"}, {"97190308429331704", "97190308429331710"},
		{"895552847554639031", "895552847554639000"},
		{"999999999999999999999", "1e+21"}, {"1234567890123456789012", "1.2345678901234568e+21"},
		{"123456789012345678901234567890", "1.2345678901234568e+29"},
	} {
		if got := jsParseIntString(c.in); got != c.want {
			t.Errorf("jsParseIntString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, c := range normalizeCases {
		f.Add(c.in)
	}
	f.Add("\xff$1.5")
	f.Fuzz(func(t *testing.T, s string) {
		out := Normalize(s)
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Normalize(%q) = %q: invalid UTF-8", s, out)
		}
		if out != strings.TrimFunc(out, jsSpace) {
			t.Fatalf("Normalize(%q) = %q: not trimmed", s, out)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	const s = "Dr. Smith paid $5.50 at 10:30 in the 1990s, about 3.14 times more (etc.)."
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Normalize(s)
	}
}
