/* AT-SPI role and state names (AtspiRole, AtspiStateType numbers in
 * at-spi2-core 2.46), as AT-SPI's own role names spell them. */
#include "a11y/a11y.h"

#include <string.h>

static const char* const roles[] = {
	"invalid", "accelerator label", "alert", "animation", "arrow", "calendar",
	"canvas", "check box", "check menu item", "color chooser", "column header",
	"combo box", "date editor", "desktop icon", "desktop frame", "dial",
	"dialog", "directory pane", "drawing area", "file chooser", "filler",
	"focus traversable", "font chooser", "frame", "glass pane",
	"html container", "icon", "image", "internal frame", "label",
	"layered pane", "list", "list item", "menu", "menu bar", "menu item",
	"option pane", "page tab", "page tab list", "panel", "password text",
	"popup menu", "progress bar", "push button", "radio button",
	"radio menu item", "root pane", "row header", "scroll bar", "scroll pane",
	"separator", "slider", "spin button", "split pane", "status bar", "table",
	"table cell", "table column header", "table row header",
	"tearoff menu item", "terminal", "text", "toggle button", "tool bar",
	"tool tip", "tree", "tree table", "unknown", "viewport", "window",
	"extended", "header", "footer", "paragraph", "ruler", "application",
	"autocomplete", "editbar", "embedded", "entry", "chart", "caption",
	"document frame", "heading", "page", "section", "redundant object", "form",
	"link", "input method window", "table row", "tree item",
	"document spreadsheet", "document presentation", "document text",
	"document web", "document email", "comment", "list box", "grouping",
	"image map", "notification", "info bar", "level bar", "title bar",
	"block quote", "audio", "video", "definition", "article", "landmark", "log",
	"marquee", "math", "rating", "timer", "static", "math fraction",
	"math root", "subscript", "superscript", "description list",
	"description term", "description value", "footnote", "content deletion",
	"content insertion", "mark", "suggestion", "push button menu",
};

const char* a11y_role_name(int role)
{
	if (role < 0 || (size_t)role >= sizeof(roles) / sizeof(roles[0]))
		return "unknown";
	return roles[role];
}

int a11y_role_lookup(const char* name)
{
	char want[64];
	size_t n = strlen(name);
	if (n == 0 || n >= sizeof(want))
		return -1;
	for (size_t i = 0; i <= n; i++)
		want[i] = name[i] == '_' ? ' ' : (char)(name[i] >= 'A' && name[i] <= 'Z'
				? name[i] - 'A' + 'a' : name[i]);
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(roles[i], want) == 0)
			return (int)i;
	return -1;
}

static const char* const states[A11Y_STATE_COUNT] = {
	[A11Y_ACTIVE] = "active", [A11Y_ARMED] = "armed", [A11Y_BUSY] = "busy",
	[A11Y_CHECKED] = "checked", [A11Y_COLLAPSED] = "collapsed",
	[A11Y_DEFUNCT] = "defunct", [A11Y_EDITABLE] = "editable",
	[A11Y_ENABLED] = "enabled", [A11Y_EXPANDABLE] = "expandable",
	[A11Y_EXPANDED] = "expanded", [A11Y_FOCUSABLE] = "focusable",
	[A11Y_FOCUSED] = "focused", [A11Y_MODAL] = "modal",
	[A11Y_MULTI_LINE] = "multi_line", [A11Y_PRESSED] = "pressed",
	[A11Y_SELECTABLE] = "selectable", [A11Y_SELECTED] = "selected",
	[A11Y_SENSITIVE] = "sensitive", [A11Y_SHOWING] = "showing",
	[A11Y_SINGLE_LINE] = "single_line", [A11Y_VISIBLE] = "visible",
	[A11Y_INDETERMINATE] = "indeterminate", [A11Y_REQUIRED] = "required",
	[A11Y_CHECKABLE] = "checkable", [A11Y_HAS_POPUP] = "has_popup",
	[A11Y_READ_ONLY] = "read_only",
};

const char* a11y_state_name(int state)
{
	if (state < 0 || state >= A11Y_STATE_COUNT)
		return NULL;
	return states[state];
}

size_t a11y_utf8_cut(const char* s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t n = max;
	/* s[n] is the first byte left out: back up while it continues a
	 * character (at most 3 steps in valid UTF-8). */
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* ASCII white space only: names are UTF-8, and a multi-byte space (U+00A0)
 * may be meant. */
static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

size_t a11y_name_trim(const char* s, size_t* start)
{
	size_t b = 0, e = strlen(s);
	while (b < e && space(s[b]))
		b++;
	while (e > b && space(s[e - 1]))
		e--;
	if (start)
		*start = b;
	return e;
}

bool a11y_name_eq(const char* a, const char* b)
{
	size_t sa, sb;
	size_t ea = a11y_name_trim(a, &sa), eb = a11y_name_trim(b, &sb);
	return ea - sa == eb - sb && memcmp(a + sa, b + sb, ea - sa) == 0;
}
