#pragma once

/* Reals in results, events and logs are rounded to what they measure, so
 * they read 1.333333 and 111.32, not 1.3333333333333333 and
 * 111.32000000000005: times and durations to 3 decimals (milliseconds of
 * seconds, microseconds of milliseconds), scale factors to 6. Every JSON
 * reader (JS, Python, jq) then shows the short form. */

#include <math.h>

#define REAL_TIME 3	/* seconds, milliseconds */
#define REAL_SCALE 6	/* ratios such as scale_factor */

static inline double real_round(double v, int decimals)
{
	if (!isfinite(v))
		return 0;
	double p = 1;
	for (int i = 0; i < decimals; i++)
		p *= 10;
	double r = round(v * p) / p;
	return r == 0 ? 0 : r;	/* never -0 */
}
