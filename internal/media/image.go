package media

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
)

// firstFrame is what the video renderer needs to know about a first-frame
// image before handing it to ffmpeg.
type firstFrame struct {
	demuxer     string // ffmpeg demuxer: png_pipe, jpeg_pipe, webp_pipe
	orientation int    // EXIF orientation 1..8 (JPEG only; 1 = as stored)
}

// sniffImage identifies the image by its content (not its name, which may
// lie or be missing) and reads a JPEG's EXIF orientation: phones store
// portrait photos sideways with an orientation tag, and ffmpeg 5.1 does
// not apply it, so the buyer would get a sideways clip.
func sniffImage(path string) (firstFrame, error) {
	f, err := os.Open(path)
	if err != nil {
		return firstFrame{}, &FailedError{Step: "validate", Message: "the first-frame image cannot be read: " + err.Error()}
	}
	defer f.Close()
	head := make([]byte, 256<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return firstFrame{demuxer: "png_pipe", orientation: 1}, nil
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return firstFrame{demuxer: "jpeg_pipe", orientation: jpegOrientation(head)}, nil
	case len(head) >= 12 && string(head[0:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return firstFrame{demuxer: "webp_pipe", orientation: 1}, nil
	}
	return firstFrame{}, &FailedError{Step: "validate", Message: "the first-frame image is not a JPEG, PNG or WebP file"}
}

// orient is the filter chain (ending in ',' or empty) that turns the
// stored image upright.
func (f firstFrame) orient() string {
	switch f.orientation {
	case 2:
		return "hflip,"
	case 3:
		return "hflip,vflip,"
	case 4:
		return "vflip,"
	case 5:
		return "transpose=cclock_flip," // transpose across the main diagonal
	case 6:
		return "transpose=clock,"
	case 7:
		return "transpose=clock_flip,"
	case 8:
		return "transpose=cclock,"
	}
	return ""
}

// jpegOrientation reads tag 0x0112 from IFD0 of the EXIF APP1 segment; 1
// when there is none or anything looks wrong.
func jpegOrientation(b []byte) int {
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return 1
		}
		marker := b[i+1]
		if marker == 0xff { // fill byte
			i++
			continue
		}
		if marker == 0xda || marker == 0xd9 { // start of scan / end of image
			return 1
		}
		size := int(binary.BigEndian.Uint16(b[i+2 : i+4]))
		if size < 2 || i+2+size > len(b) {
			return 1
		}
		seg := b[i+4 : i+2+size]
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		i += 2 + size
	}
	return 1
}

func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[0:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int(bo.Uint32(t[4:8]))
	if ifd < 8 || ifd+2 > len(t) {
		return 1
	}
	n := int(bo.Uint16(t[ifd:]))
	for k := 0; k < n; k++ {
		e := ifd + 2 + 12*k
		if e+12 > len(t) {
			return 1
		}
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 {
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}
