/* gnome/'s pure parts: the address deskd passes down (format and parse,
 * every refusal), and the extension written out for a shell (the files
 * compiled in, 0700 folders and 0600 files, its metadata naming its uuid).
 * The D-Bus and PipeWire sides run against a real GNOME Shell in
 * tests/integration/gnome.test.mjs. */
#define _GNU_SOURCE
#include "gnome/gnome.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void address_checks(void)
{
	char out[GNOME_ADDRESS_MAX];
	struct gnome_address a = { .bus = "unix:path=/run/d/bus,guid=ab12" }, b;
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12");
	TST_CHECK(gnome_is_address(out) && !gnome_is_address(":1") && !gnome_is_address(NULL));
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_EQ_STR(b.bus, a.bus);
	TST_CHECK(b.pipewire[0] == '\0' && b.wayland[0] == '\0');
	snprintf(a.pipewire, sizeof(a.pipewire), "/run/d/pipewire-0");
	snprintf(a.wayland, sizeof(a.wayland), "/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12?pipewire=/run/d/pipewire-0"
			"&wayland=/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_EQ_STR(b.bus, a.bus);
	TST_EQ_STR(b.pipewire, a.pipewire);
	TST_EQ_STR(b.wayland, a.wayland);
	a.pipewire[0] = '\0';
	TST_EQ_INT(gnome_address_format(&a, out, sizeof(out)), 0);
	TST_EQ_STR(out, "gnome:unix:path=/run/d/bus,guid=ab12?wayland=/run/d/wayland-deskd");
	TST_EQ_INT(gnome_address_parse(out, &b), 0);
	TST_CHECK(b.pipewire[0] == '\0');
	TST_EQ_STR(b.wayland, a.wayland);
	/* Refusals: no bus, a part with '?' or '&', too small, unknown parts. */
	struct gnome_address empty = { 0 };
	TST_EQ_INT(gnome_address_format(&empty, out, sizeof(out)), -EINVAL);
	struct gnome_address q = { .bus = "unix:path=/a?b" };
	TST_EQ_INT(gnome_address_format(&q, out, sizeof(out)), -EINVAL);
	struct gnome_address amp = { .bus = "unix:path=/a", .wayland = "/w&x" };
	TST_EQ_INT(gnome_address_format(&amp, out, sizeof(out)), -EINVAL);
	TST_EQ_INT(gnome_address_format(&a, out, 20), -ENAMETOOLONG);
	TST_EQ_INT(gnome_address_parse("gnome:", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:?wayland=/w", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:unix:path=/a?sway=/s", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("gnome:unix:path=/a?wayland", &b), -EINVAL);
	TST_EQ_INT(gnome_address_parse("wayland:/s", &b), -EINVAL);
	char big[GNOME_ADDRESS_MAX + 300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "gnome:", 6);
	TST_EQ_INT(gnome_address_parse(big, &b), -ENAMETOOLONG);
}

static void extension_checks(void)
{
	char dir[] = "/tmp/deskd-gnometest-XXXXXX", path[256], err[256];
	TST_CHECK(mkdtemp(dir) != NULL);
	TST_EQ_INT(gnome_extension_install(dir, err, sizeof(err)), 0);
	struct stat st;
	snprintf(path, sizeof(path), "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID, dir);
	TST_CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0);
	const char* files[] = { "extension.js", "metadata.json" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID "/%s",
				dir, files[i]);
		TST_CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600
				&& st.st_size > 100);
	}
	/* The metadata names the folder's uuid (GNOME Shell skips it otherwise). */
	FILE* f = fopen(path, "r");
	char buf[2048] = "";
	TST_CHECK(f && fread(buf, 1, sizeof(buf) - 1, f) > 0);
	if (f)
		fclose(f);
	TST_CHECK(strstr(buf, "\"uuid\": \"" GNOME_EXTENSION_UUID "\"") != NULL);
	/* Written again over itself: the same files. */
	TST_EQ_INT(gnome_extension_install(dir, err, sizeof(err)), 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	TST_EQ_INT(system(cmd), 0);
	/* A data dir that cannot be made says where. */
	TST_CHECK(gnome_extension_install("/proc/deskd-no", err, sizeof(err)) < 0);
	TST_CHECK(strstr(err, "/proc/deskd-no") != NULL);
}

int main(void)
{
	address_checks();
	extension_checks();
	TST_END();
}
