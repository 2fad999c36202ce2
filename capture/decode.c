/* Decoding the images deskd itself encoded (PNG through libpng's simplified
 * API, JPEG through libturbojpeg) back into frames, for the timeline's
 * thumbnails: they are made from the very image an agent got, off the
 * answer's path. Bounded: nothing over CAPTURE_DECODE_MAX_PIXELS. */
#include "capture/capture.h"

#include <errno.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static struct frame* decode_png(const uint8_t* data, size_t len)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, data, len))
		return NULL;
	if (!img.width || !img.height
			|| (uint64_t)img.width * img.height > CAPTURE_DECODE_MAX_PIXELS) {
		png_image_free(&img);
		return NULL;
	}
	img.format = PNG_FORMAT_BGRA;	/* the frame's BGRX, alpha in X */
	struct frame* f = frame_new((int)img.width, (int)img.height);
	if (!f) {
		png_image_free(&img);
		return NULL;
	}
	if (!png_image_finish_read(&img, NULL, f->data, f->stride, NULL)) {
		png_image_free(&img);
		frame_unref(f);
		return NULL;
	}
	return f;
}

static struct frame* decode_jpeg(const uint8_t* data, size_t len)
{
	tjhandle tj = tjInitDecompress();
	if (!tj)
		return NULL;
	int w, h, sub, space;
	struct frame* f = NULL;
	if (tjDecompressHeader3(tj, data, (unsigned long)len, &w, &h, &sub, &space) == 0
			&& w > 0 && h > 0 && (uint64_t)w * (uint64_t)h <= CAPTURE_DECODE_MAX_PIXELS
			&& (f = frame_new(w, h))
			&& tjDecompress2(tj, data, (unsigned long)len, f->data, w, f->stride, h,
					TJPF_BGRX, TJFLAG_FASTDCT) != 0) {
		frame_unref(f);
		f = NULL;
	}
	tjDestroy(tj);
	return f;
}

struct frame* capture_decode(const void* data, size_t len)
{
	const uint8_t* p = data;
	if (!p || len < 8)
		return NULL;
	if (memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
		return decode_png(p, len);
	if (p[0] == 0xff && p[1] == 0xd8)
		return decode_jpeg(p, len);
	return NULL;
}
