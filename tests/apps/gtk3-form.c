/* A GTK3 form for the accessibility tests: a text entry, a multi-line text
 * view, a check box, a combo box, a slider, "Save" and "Delete" buttons and
 * a status label. It writes its whole state as JSON to --state on every
 * change (atomically: a temp file renamed), so tests check effects through
 * the app itself, not through AT-SPI.
 *
 *   gtk3-form --state FILE [--title TITLE]
 */
#include <gtk/gtk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* state_path;
static GtkWidget *entry, *notes, *check, *combo, *scale, *status;
static int saves, deletes, changes;
static char* saved_name;

static void put_json_string(GString* out, const char* s)
{
	g_string_append_c(out, '"');
	for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
		switch (*p) {
		case '"': g_string_append(out, "\\\""); break;
		case '\\': g_string_append(out, "\\\\"); break;
		case '\n': g_string_append(out, "\\n"); break;
		case '\r': g_string_append(out, "\\r"); break;
		case '\t': g_string_append(out, "\\t"); break;
		default:
			if (*p < 0x20)
				g_string_append_printf(out, "\\u%04x", *p);
			else
				g_string_append_c(out, (char)*p);
		}
	}
	g_string_append_c(out, '"');
}

static void write_state(void)
{
	if (!state_path)
		return;
	changes++;
	GtkTextIter a, b;
	GtkTextBuffer* buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(notes));
	gtk_text_buffer_get_bounds(buf, &a, &b);
	char* text = gtk_text_buffer_get_text(buf, &a, &b, TRUE);
	char* size = gtk_combo_box_text_get_active_text(GTK_COMBO_BOX_TEXT(combo));
	GString* out = g_string_new("{\"name\":");
	put_json_string(out, gtk_entry_get_text(GTK_ENTRY(entry)));
	g_string_append(out, ",\"notes\":");
	put_json_string(out, text);
	g_string_append_printf(out, ",\"subscribe\":%s,\"size\":",
			gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(check)) ? "true" : "false");
	put_json_string(out, size ? size : "");
	g_string_append_printf(out, ",\"volume\":%g,\"saves\":%d,\"deletes\":%d,\"changes\":%d,\"saved_name\":",
			gtk_range_get_value(GTK_RANGE(scale)), saves, deletes, changes);
	put_json_string(out, saved_name ? saved_name : "");
	g_string_append_printf(out, ",\"pid\":%d}\n", (int)getpid());
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", state_path);
	FILE* f = fopen(tmp, "w");
	if (f) {
		fwrite(out->str, 1, out->len, f);
		fclose(f);
		rename(tmp, state_path);
	}
	g_string_free(out, TRUE);
	g_free(text);
	g_free(size);
}

static void changed(void) { write_state(); }

static void on_save(GtkButton* b, gpointer ud)
{
	saves++;
	g_free(saved_name);
	saved_name = g_strdup(gtk_entry_get_text(GTK_ENTRY(entry)));
	char msg[64];
	snprintf(msg, sizeof(msg), "Saved %d", saves);
	gtk_label_set_text(GTK_LABEL(status), msg);
	write_state();
}

static void on_delete(GtkButton* b, gpointer ud)
{
	deletes++;
	gtk_entry_set_text(GTK_ENTRY(entry), "");
	write_state();
}

static void name_it(GtkWidget* w, const char* name)
{
	atk_object_set_name(gtk_widget_get_accessible(w), name);
}

static GtkWidget* row(GtkWidget* grid, int r, const char* label, GtkWidget* w)
{
	GtkWidget* l = gtk_label_new(label);
	gtk_widget_set_halign(l, GTK_ALIGN_START);
	gtk_grid_attach(GTK_GRID(grid), l, 0, r, 1, 1);
	gtk_widget_set_hexpand(w, TRUE);
	gtk_grid_attach(GTK_GRID(grid), w, 1, r, 1, 1);
	return w;
}

int main(int argc, char** argv)
{
	const char* title = "deskd gtk3 form";
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--state") == 0)
			state_path = argv[++i];
		else if (strcmp(argv[i], "--title") == 0)
			title = argv[++i];
	}
	gtk_init(&argc, &argv);
	GtkWidget* win = gtk_window_new(GTK_WINDOW_TOPLEVEL);
	gtk_window_set_title(GTK_WINDOW(win), title);
	gtk_window_set_default_size(GTK_WINDOW(win), 480, 420);
	gtk_window_move(GTK_WINDOW(win), 40, 40);
	g_signal_connect(win, "destroy", G_CALLBACK(gtk_main_quit), NULL);
	GtkWidget* grid = gtk_grid_new();
	gtk_grid_set_row_spacing(GTK_GRID(grid), 8);
	gtk_grid_set_column_spacing(GTK_GRID(grid), 8);
	gtk_container_set_border_width(GTK_CONTAINER(grid), 12);
	gtk_container_add(GTK_CONTAINER(win), grid);

	entry = row(grid, 0, "Name", gtk_entry_new());
	name_it(entry, "Name");
	g_signal_connect(entry, "changed", G_CALLBACK(changed), NULL);

	notes = gtk_text_view_new();
	GtkWidget* scroll = gtk_scrolled_window_new(NULL, NULL);
	gtk_widget_set_size_request(scroll, -1, 90);
	gtk_container_add(GTK_CONTAINER(scroll), notes);
	row(grid, 1, "Notes", scroll);
	name_it(notes, "Notes");
	g_signal_connect(gtk_text_view_get_buffer(GTK_TEXT_VIEW(notes)), "changed", G_CALLBACK(changed), NULL);

	check = gtk_check_button_new_with_label("Subscribe");
	gtk_grid_attach(GTK_GRID(grid), check, 1, 2, 1, 1);
	g_signal_connect(check, "toggled", G_CALLBACK(changed), NULL);

	combo = gtk_combo_box_text_new();
	gtk_combo_box_text_append_text(GTK_COMBO_BOX_TEXT(combo), "Small");
	gtk_combo_box_text_append_text(GTK_COMBO_BOX_TEXT(combo), "Medium");
	gtk_combo_box_text_append_text(GTK_COMBO_BOX_TEXT(combo), "Large");
	gtk_combo_box_set_active(GTK_COMBO_BOX(combo), 0);
	row(grid, 3, "Size", combo);
	g_signal_connect(combo, "changed", G_CALLBACK(changed), NULL);

	scale = gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 100, 1);
	gtk_range_set_value(GTK_RANGE(scale), 30);
	row(grid, 4, "Volume", scale);
	name_it(scale, "Volume");
	g_signal_connect(scale, "value-changed", G_CALLBACK(changed), NULL);

	GtkWidget* box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
	GtkWidget* save = gtk_button_new_with_label("Save");
	GtkWidget* del = gtk_button_new_with_label("Delete");
	g_signal_connect(save, "clicked", G_CALLBACK(on_save), NULL);
	g_signal_connect(del, "clicked", G_CALLBACK(on_delete), NULL);
	gtk_box_pack_start(GTK_BOX(box), save, FALSE, FALSE, 0);
	gtk_box_pack_start(GTK_BOX(box), del, FALSE, FALSE, 0);
	gtk_grid_attach(GTK_GRID(grid), box, 1, 5, 1, 1);

	status = gtk_label_new("Not saved");
	gtk_grid_attach(GTK_GRID(grid), status, 1, 6, 1, 1);

	gtk_widget_show_all(win);
	changes = -1;
	write_state();
	gtk_main();
	return 0;
}
