package linkpage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// minContrast is WCAG 2's contrast ratio for normal text (level AA,
// success criterion 1.4.3): every pair of text and background colours the
// pages use meets it, the brand's accent included.
const minContrast = 4.5

// accentContrast is what readableOn aims at: minContrast with a margin, so
// that a browser's own rounding of the colours never lands below it.
const accentContrast = 4.6

// rgb is a colour of the sRGB space, each channel 0..255.
type rgb struct{ r, g, b float64 }

// parseHex reads "#rgb" or "#rrggbb" (case-insensitive). Errors: anything
// else.
func parseHex(s string) (rgb, error) {
	h, ok := strings.CutPrefix(s, "#")
	if !ok || (len(h) != 3 && len(h) != 6) {
		return rgb{}, fmt.Errorf("%q is not a colour: want #rgb or #rrggbb", s)
	}
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	n, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return rgb{}, fmt.Errorf("%q is not a colour: want #rgb or #rrggbb", s)
	}
	return rgb{float64(n >> 16 & 0xff), float64(n >> 8 & 0xff), float64(n & 0xff)}, nil
}

// hex writes c as "#rrggbb".
func (c rgb) hex() string {
	ch := func(v float64) int { return int(math.Round(math.Max(0, math.Min(255, v)))) }
	return fmt.Sprintf("#%02x%02x%02x", ch(c.r), ch(c.g), ch(c.b))
}

// luminance is WCAG 2's relative luminance of c, 0 (black) to 1 (white).
func (c rgb) luminance() float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

// contrast is WCAG 2's contrast ratio of a and b, 1 to 21.
func contrast(a, b rgb) float64 {
	la, lb := a.luminance(), b.luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// mix returns c moved a fraction t (0..1) of the way to to, each channel
// rounded as hex writes it.
func (c rgb) mix(to rgb, t float64) rgb {
	return rgb{math.Round(c.r + (to.r-c.r)*t), math.Round(c.g + (to.g-c.g)*t), math.Round(c.b + (to.b-c.b)*t)}
}

var (
	black = rgb{0, 0, 0}
	white = rgb{255, 255, 255}
)

// readableOn returns c, or c moved toward black (toward is black) or white
// in small steps until it reaches accentContrast against every one of
// backgrounds: the brand's accent as the pages' link and button colour in
// light and dark mode. The first step that reaches it wins, so the accent
// stays as close to the brand's as the rule allows.
func readableOn(c, toward rgb, backgrounds ...rgb) rgb {
	for i := 0; i <= 40; i++ {
		m := c.mix(toward, float64(i)/40)
		ok := true
		for _, bg := range backgrounds {
			if contrast(m, bg) < accentContrast {
				ok = false
				break
			}
		}
		if ok {
			return m
		}
	}
	return toward
}

// textOn returns black or white, whichever contrasts more with fill: the
// text colour of a button filled with the accent. One of the two always
// reaches 4.58:1 (the worst fill is a mid grey).
func textOn(fill rgb) rgb {
	if contrast(fill, white) >= contrast(fill, black) {
		return white
	}
	return black
}
