/* Unit tests for server/: options, schema validation, tool results. */
#include "base/options.h"
#include "tools/schema.h"
#include "tools/tools.h"
#include "desktop/desktop.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdlib.h>

static void test_options(void)
{
	struct options o;
	char err[256];
	char** argv1 = (char**)(const char*[]){ "deskd", "--listen", "127.0.0.1:0", "--max-image-dimension=640",
		"--launch", "xterm", "--launch", "xclock", "--no-auth", NULL };
	TST_EQ_INT(options_parse(&o, 9, argv1, err, sizeof(err)), 0);
	TST_EQ_STR(o.listen_host, "127.0.0.1");
	TST_EQ_INT(o.listen_port, 0);
	TST_EQ_INT(o.max_image_dimension, 640);
	TST_EQ_INT(o.n_launch, 2);
	TST_EQ_STR(o.launch[1], "xclock");
	TST_CHECK(o.no_auth);
	options_deinit(&o);

	char** argv2 = (char**)(const char*[]){ "deskd", "--listen", "0.0.0.0:80", "--no-auth", NULL };
	TST_EQ_INT(options_parse(&o, 4, argv2, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "loopback") != NULL);
	options_deinit(&o);

	char** argv3 = (char**)(const char*[]){ "deskd", "--listen", "[::1]:7800", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv3, err, sizeof(err)), 0);
	TST_EQ_STR(o.listen_host, "::1");
	TST_CHECK(options_listen_is_loopback(&o));
	options_deinit(&o);

	setenv("DESKD_MAX_IMAGE_DIMENSION", "800", 1);
	char** argv4 = (char**)(const char*[]){ "deskd", NULL };
	TST_EQ_INT(options_parse(&o, 1, argv4, err, sizeof(err)), 0);
	TST_EQ_INT(o.max_image_dimension, 800);
	options_deinit(&o);
	char** argv5 = (char**)(const char*[]){ "deskd", "--max-image-dimension", "900", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv5, err, sizeof(err)), 0);
	TST_EQ_INT(o.max_image_dimension, 900);	/* the command line wins */
	options_deinit(&o);
	unsetenv("DESKD_MAX_IMAGE_DIMENSION");

	char** argv6 = (char**)(const char*[]){ "deskd", "record", "--window", "0x200001", "--out", "/tmp/x.mp4", NULL };
	TST_EQ_INT(options_parse(&o, 6, argv6, err, sizeof(err)), 0);
	TST_EQ_INT(o.mode, OPTIONS_RECORD);
	TST_EQ_INT(o.record_window, 0x200001);
	options_deinit(&o);
	char** argv6b = (char**)(const char*[]){ "deskd", "gnome-extension", "--shell-version", "47", NULL };
	TST_EQ_INT(options_parse(&o, 4, argv6b, err, sizeof(err)), 0);
	TST_EQ_INT(o.mode, OPTIONS_GNOME_EXTENSION);
	TST_EQ_INT(o.shell_version, 47);
	options_deinit(&o);
	char** argv6c = (char**)(const char*[]){ "deskd", "gnome-extensions", NULL };
	TST_EQ_INT(options_parse(&o, 2, argv6c, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "unknown command 'gnome-extensions'") != NULL);
	options_deinit(&o);

	char** argv8 = (char**)(const char*[]){ "deskd", "--listen", "127.example.com:80", "--no-auth", NULL };
	TST_EQ_INT(options_parse(&o, 4, argv8, err, sizeof(err)), -EINVAL);
	options_deinit(&o);
	char** argv9 = (char**)(const char*[]){ "deskd", "--listen", "127.0.0.2:0", "--no-auth", NULL };
	TST_EQ_INT(options_parse(&o, 4, argv9, err, sizeof(err)), 0);
	options_deinit(&o);

	char** argv10 = (char**)(const char*[]){ "deskd", NULL };
	TST_EQ_INT(options_parse(&o, 1, argv10, err, sizeof(err)), 0);
	TST_EQ_INT(o.tools, OPTIONS_TOOLS_BATCH);	/* the default keeps tools/list small */
	options_deinit(&o);
	char** argv11 = (char**)(const char*[]){ "deskd", "--tools", "both", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv11, err, sizeof(err)), 0);
	TST_EQ_INT(o.tools, OPTIONS_TOOLS_BOTH);
	options_deinit(&o);

	char** argv12 = (char**)(const char*[]){ "deskd", "--desktop", "gnome", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv12, err, sizeof(err)), 0);
	TST_CHECK(o.gnome && !o.wayland);
	options_deinit(&o);
	char** argv13 = (char**)(const char*[]){ "deskd", "--desktop", "kde", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv13, err, sizeof(err)), -EINVAL);
	TST_EQ_STR(err, "--desktop: 'kde' is not x11, wayland, gnome or mutter");
	options_deinit(&o);

	char** argv7 = (char**)(const char*[]){ "deskd", "--tools", "sideways", NULL };
	TST_EQ_INT(options_parse(&o, 3, argv7, err, sizeof(err)), -EINVAL);
	options_deinit(&o);
}

static int validate_text(json_t* schema, const char* text, char* err, size_t size)
{
	json_t* v = json_loads(text, 0, NULL);
	int rc = schema_validate(schema, v, err, size);
	json_decref(v);
	return rc;
}

static void test_schema(void)
{
	json_t* schema = json_loads("{\"type\":\"object\",\"properties\":{"
		"\"x\":{\"type\":\"integer\",\"minimum\":0},"
		"\"fmt\":{\"enum\":[\"png\",\"jpeg\"]},"
		"\"path\":{\"type\":\"array\",\"minItems\":2,\"items\":{\"$ref\":\"#/$defs/pt\"}}},"
		"\"required\":[\"x\"],\"additionalProperties\":false,"
		"\"$defs\":{\"pt\":{\"type\":\"object\",\"required\":[\"x\",\"y\"]}}}", 0, NULL);
	char err[256];
	TST_CHECK(schema != NULL);
#define VALIDATE(text) validate_text(schema, text, err, sizeof(err))
	TST_EQ_INT(VALIDATE("{\"x\":3}"), 0);
	TST_EQ_INT(VALIDATE("{\"x\":3.0}"), 0);
	TST_EQ_INT(VALIDATE("{\"x\":-1}"), -EINVAL);
	TST_CHECK(strstr(err, "x: must be at least 0") != NULL);
	TST_EQ_INT(VALIDATE("{}"), -EINVAL);
	TST_CHECK(strstr(err, "x: is required") != NULL);
	TST_EQ_INT(VALIDATE("{\"x\":1,\"y\":2}"), -EINVAL);
	TST_CHECK(strstr(err, "y: is not a known argument") != NULL);
	TST_EQ_INT(VALIDATE("{\"x\":1,\"fmt\":\"gif\"}"), -EINVAL);
	TST_EQ_STR(err, "fmt: \"gif\" is not one of: png, jpeg");
	TST_EQ_INT(VALIDATE("{\"x\":1,\"path\":[{\"x\":1,\"y\":2}]}"), -EINVAL);
	TST_EQ_INT(VALIDATE("{\"x\":1,\"path\":[{\"x\":1,\"y\":2},{\"x\":1}]}"), -EINVAL);
	TST_CHECK(strstr(err, "path[1].y: is required") != NULL);
	TST_EQ_INT(VALIDATE("{\"x\":\"1\"}"), -EINVAL);
	TST_CHECK(strstr(err, "expected integer, got string") != NULL);
#undef VALIDATE
	json_decref(schema);
}

/* Limits print as written, anyOf names the types it takes, and null is
 * absent for optional members (top level and inside items/$ref). */
static void test_schema_shapes_and_nulls(void)
{
	json_t* schema = json_loads("{\"type\":\"object\",\"additionalProperties\":false,"
		"\"required\":[\"actions\"],\"properties\":{"
		"\"window\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4294967295},"
		"\"ratio\":{\"type\":\"number\",\"maximum\":0.25},"
		"\"keys\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\"}},{\"type\":\"string\"}]},"
		"\"maybe\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
		"\"actions\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/a\"}}},"
		"\"$defs\":{\"a\":{\"type\":\"object\",\"required\":[\"type\"],\"additionalProperties\":false,"
		"\"properties\":{\"type\":{\"type\":\"string\"},\"x\":{\"type\":\"integer\"}}}}}", 0, NULL);
	TST_CHECK(schema != NULL);
	char err[256];
#define VALIDATE(text) validate_text(schema, text, err, sizeof(err))
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"window\":4294967295}"), 0);
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"window\":4294967296}"), -EINVAL);
	TST_EQ_STR(err, "window: must be at most 4294967295");
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"window\":9007199254740993}"), -EINVAL);
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"ratio\":0.5}"), -EINVAL);
	TST_EQ_STR(err, "ratio: must be at most 0.25");
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"keys\":\"ctrl+c\"}"), 0);
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"keys\":[\"ctrl\",\"c\"]}"), 0);
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"keys\":7}"), -EINVAL);
	TST_EQ_STR(err, "keys: expected array or string, got integer");
	TST_EQ_INT(VALIDATE("{\"actions\":[],\"keys\":[7]}"), -EINVAL);
	TST_EQ_STR(err, "keys[0]: expected string, got integer");
#undef VALIDATE

	json_t* v = json_loads("{\"actions\":[{\"type\":\"a\",\"x\":null},{\"type\":null}],"
		"\"window\":null,\"maybe\":null,\"extra\":null}", 0, NULL);
	TST_EQ_INT(schema_drop_nulls(schema, v), 2);
	char* text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	/* Kept: a required member (refused next), a property that takes null,
	 * an unknown one (refused next). */
	TST_EQ_STR(text, "{\"actions\":[{\"type\":\"a\"},{\"type\":null}],\"extra\":null,\"maybe\":null}");
	free(text);
	json_decref(v);
	json_decref(schema);
}

static void test_results(void)
{
	struct tool_result r;
	tool_result_init(&r);
	tool_result_error(&r, TOOL_WINDOW_NOT_FOUND, json_pack("{s:i}", "failed_index", 2),
			"no window %u", 7u);
	json_t* j = tool_result_to_json(&r);
	TST_CHECK(json_is_true(json_object_get(j, "isError")));
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(j, "structuredContent"), "code")),
			"window_not_found");
	TST_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "structuredContent"),
			"failed_index")), 2);
	TST_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(j, "content"), 0),
			"text")), "window_not_found: no window 7");
	json_decref(j);
	tool_result_deinit(&r);

	tool_result_init(&r);
	TST_EQ_INT(tool_result_image(&r, "abcd", 4, "image/png"), 0);
	TST_EQ_STR(json_string_value(json_object_get(json_array_get(r.content, 0), "data")),
			"YWJjZA==");
	TST_EQ_INT(r.image_len, 4);
	tool_result_deinit(&r);
	TST_EQ_INT(tool_code_http_status(TOOL_OUTPUT_EXISTS), 409);
	/* A full disk: its own code, 507, from either errno. */
	TST_EQ_STR(tool_code_name(TOOL_NO_SPACE), "no_space");
	TST_EQ_INT(tool_code_http_status(TOOL_NO_SPACE), 507);
	TST_EQ_INT(tool_code_for_errno(-ENOSPC), TOOL_NO_SPACE);
	TST_EQ_INT(tool_code_for_write_errno(-EDQUOT), TOOL_NO_SPACE);
	TST_EQ_INT(tool_code_for_write_errno(-EIO), TOOL_INTERNAL);
	/* No spare keycode to type a character on: the display's state, 409. */
	TST_EQ_STR(tool_code_name(TOOL_NO_SPARE_KEYS), "no_spare_keys");
	TST_EQ_INT(tool_code_http_status(TOOL_NO_SPARE_KEYS), 409);
	TST_EQ_STR(tool_code_name(TOOL_INTERNAL), "internal");
}

static void test_coordinates(void)
{
	int w, h;
	desktop_scaled_size(1280, 800, 1280, &w, &h);
	TST_EQ_INT(w, 1280);
	TST_EQ_INT(h, 800);
	desktop_scaled_size(1280, 800, 640, &w, &h);
	TST_EQ_INT(w, 640);
	TST_EQ_INT(h, 400);
	desktop_scaled_size(1280, 800, 800, &w, &h);	/* 0.625 */
	TST_EQ_INT(w, 800);
	TST_EQ_INT(h, 500);
	desktop_scaled_size(1920, 1080, 1366, &w, &h);
	TST_EQ_INT(w, 1366);
	TST_EQ_INT(h, 768);
	desktop_scaled_size(300, 200, 0, &w, &h);		/* native */
	TST_EQ_INT(w, 300);
	desktop_scaled_size(100, 20000, 16, &w, &h);	/* never below 1 */
	TST_EQ_INT(w, 1);
	TST_EQ_INT(h, 16);
	TST_EQ_INT(desktop_map(100, 1280, 640), 200);
	TST_EQ_INT(desktop_map(799, 1280, 800), 1278);
	TST_EQ_INT(desktop_map(37, 1280, 1280), 37);
	/* Every image pixel maps inside the target. */
	int worst = 0;
	for (int v = 0; v < 474; v++) {
		int d = desktop_map(v, 1280, 474);
		if (d < 0 || d >= 1280)
			worst = 1;
	}
	TST_EQ_INT(worst, 0);
}

int main(void)
{
	test_coordinates();
	test_options();
	test_schema();
	test_schema_shapes_and_nulls();
	test_results();
	TST_END();
}
