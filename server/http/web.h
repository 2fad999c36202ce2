#pragma once

/* The dashboard's static files, compiled into the binary (scripts/embed.c). */

#include <stddef.h>

struct web_asset {
	const char* path;	/* "/index.html" */
	const unsigned char* data;
	size_t size;
};

/** NULL-terminated table generated at build time. */
extern const struct web_asset web_assets[];

/** Register GET / and /static/...; before http_start(). */
int web_register(void);
