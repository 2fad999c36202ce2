#define _GNU_SOURCE
/* libav* by dlopen at the first recording (libav.h). */
#include "record/libav.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SONAME(base, major) base ".so." LIBAV_STR(major)
#define LIBAV_STR(x) LIBAV_STR2(x)
#define LIBAV_STR2(x) #x

enum libav_lib { AVUTIL, AVCODEC, AVFORMAT, SWSCALE, LIBAV_LIBS };

/* In load order: each after what it needs. */
static const char* const sonames[LIBAV_LIBS] = {
	[AVUTIL] = SONAME("libavutil", LIBAVUTIL_VERSION_MAJOR),
	[AVCODEC] = SONAME("libavcodec", LIBAVCODEC_VERSION_MAJOR),
	[AVFORMAT] = SONAME("libavformat", LIBAVFORMAT_VERSION_MAJOR),
	[SWSCALE] = SONAME("libswscale", LIBSWSCALE_VERSION_MAJOR),
};

struct libav libav;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_bool loaded;
static char failure[300];

static void load(void)
{
	void* handles[LIBAV_LIBS] = { 0 };
	for (int i = 0; i < LIBAV_LIBS; i++) {
		handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (!handles[i]) {
			snprintf(failure, sizeof(failure), "cannot load %s: %s", sonames[i], dlerror());
			return;
		}
	}
	struct libav t;
#define LIBAV_RESOLVE(lib, name) \
	*(void**)&t.name = dlsym(handles[lib], #name); \
	if (!t.name) { \
		snprintf(failure, sizeof(failure), "%s has no %s", sonames[lib], #name); \
		return; \
	}
	LIBAV_FUNCTIONS(LIBAV_RESOLVE)
#undef LIBAV_RESOLVE
	libav = t;
	atomic_store(&loaded, true);
}

int libav_load(char* why, size_t size)
{
	pthread_once(&once, load);
	if (atomic_load(&loaded))
		return 0;
	if (why && size)
		snprintf(why, size, "%s", failure);
	return -1;
}

bool libav_loaded(void)
{
	return atomic_load(&loaded);
}
