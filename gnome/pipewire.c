#define _GNU_SOURCE
/* libpipewire by dlopen at the first GNOME stream (pipewire.h). */
#include "gnome/pipewire.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

/* The soname of the library deskd was built against (0.3's ABI). */
#define SONAME "libpipewire-0.3.so.0"

struct pipewire pw;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_bool loaded;
static char failure[300];

static void load(void)
{
	void* handle = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		snprintf(failure, sizeof(failure), "cannot load %s (apt-get install libpipewire-0.3-0): %s",
				SONAME, dlerror());
		return;
	}
	struct pipewire t;
#define PIPEWIRE_RESOLVE(name) \
	*(void**)&t.name = dlsym(handle, #name); \
	if (!t.name) { \
		snprintf(failure, sizeof(failure), SONAME " has no %s", #name); \
		return; \
	}
	PIPEWIRE_FUNCTIONS(PIPEWIRE_RESOLVE)
#undef PIPEWIRE_RESOLVE
	pw = t;
	atomic_store(&loaded, true);
}

int pipewire_load(char* why, size_t size)
{
	pthread_once(&once, load);
	if (atomic_load(&loaded))
		return 0;
	if (why && size)
		snprintf(why, size, "%s", failure);
	return -1;
}
