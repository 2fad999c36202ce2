/* The display address deskd passes down when the desktop is GNOME:
 * "gnome:<bus>[?pipewire=<path>][&wayland=<path>][&portal=1]" (gnome/gnome.h).
 * desktop/ makes it once; capture/ and input/ read it to find Mutter's
 * bus and PipeWire, so neither looks at the environment. */
#include "gnome/gnome.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "gnome:"

/* The optional parts, in the order they are written. */
static const struct part {
	const char* key;
	size_t offset, size;
} PARTS[] = {
	{ "pipewire", offsetof(struct gnome_address, pipewire), sizeof(((struct gnome_address*)0)->pipewire) },
	{ "wayland", offsetof(struct gnome_address, wayland), sizeof(((struct gnome_address*)0)->wayland) },
	{ "portal", offsetof(struct gnome_address, portal), sizeof(((struct gnome_address*)0)->portal) },
};

bool gnome_is_address(const char* address)
{
	return address && strncmp(address, PREFIX, strlen(PREFIX)) == 0;
}

static bool plain(const char* s)
{
	return !strpbrk(s, "?&");
}

int gnome_address_format(const struct gnome_address* parts, char* out, size_t size)
{
	if (!parts->bus[0] || !plain(parts->bus))
		return -EINVAL;
	int n = snprintf(out, size, PREFIX "%s", parts->bus);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	size_t used = (size_t)n;
	char sep = '?';
	for (size_t i = 0; i < sizeof(PARTS) / sizeof(PARTS[0]); i++) {
		const char* value = (const char*)parts + PARTS[i].offset;
		if (!value[0])
			continue;
		if (!plain(value))
			return -EINVAL;
		n = snprintf(out + used, size - used, "%c%s=%s", sep, PARTS[i].key, value);
		if (n < 0 || (size_t)n >= size - used)
			return -ENAMETOOLONG;
		used += (size_t)n;
		sep = '&';
	}
	return 0;
}

static int copy_part(const char* s, size_t len, char* out, size_t size)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

int gnome_address_parse(const char* address, struct gnome_address* parts)
{
	memset(parts, 0, sizeof(*parts));
	if (!gnome_is_address(address))
		return -EINVAL;
	const char* s = address + strlen(PREFIX);
	size_t len = strcspn(s, "?");
	if (len == 0)
		return -EINVAL;
	int rc = copy_part(s, len, parts->bus, sizeof(parts->bus));
	for (s += len; rc == 0 && *s; s += len) {
		s++;	/* '?' or '&' */
		len = strcspn(s, "&");
		const char* eq = memchr(s, '=', len);
		if (!eq)
			return -EINVAL;
		const struct part* p = NULL;
		for (size_t i = 0; i < sizeof(PARTS) / sizeof(PARTS[0]); i++)
			if ((size_t)(eq - s) == strlen(PARTS[i].key) && !strncmp(s, PARTS[i].key, (size_t)(eq - s)))
				p = &PARTS[i];
		if (!p)
			return -EINVAL;
		rc = copy_part(eq + 1, len - (size_t)(eq + 1 - s), (char*)parts + p->offset, p->size);
	}
	return rc;
}
