/* The coordinate space: screenshot pixels <-> desktop pixels of a target.
 * Pure integer arithmetic, so a click lands on the pixel that was shown. */
#include "desktop/desktop.h"

void desktop_scaled_size(int w, int h, int max_dimension, int* out_w, int* out_h)
{
	int longest = w > h ? w : h;
	if (max_dimension <= 0 || longest <= max_dimension) {
		*out_w = w;
		*out_h = h;
		return;
	}
	/* Round to nearest; the longest side becomes exactly max_dimension. */
	*out_w = (int)(((int64_t)w * max_dimension * 2 + longest) / (2 * (int64_t)longest));
	*out_h = (int)(((int64_t)h * max_dimension * 2 + longest) / (2 * (int64_t)longest));
	if (*out_w < 1)
		*out_w = 1;
	if (*out_h < 1)
		*out_h = 1;
}

/* floor(a / b) for b > 0, also for negative a (C division truncates). */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

int desktop_map(int v, int physical, int image)
{
	if (image <= 0 || physical == image)
		return v;
	return (int)floor_div((int64_t)v * physical, image);
}

int desktop_unmap(int d, int physical, int image)
{
	if (physical <= 0 || physical == image)
		return d;
	/* The largest v with desktop_map(v) <= d: v * physical / image < d + 1,
	 * so v = ceil((d + 1) * image / physical) - 1. */
	return (int)(-floor_div(-((int64_t)d + 1) * image, physical) - 1);
}
