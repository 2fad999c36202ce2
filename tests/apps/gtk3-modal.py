#!/usr/bin/python3
"""A GTK 3 window with a File menu whose "Save..." item runs a modal dialog
with Gtk.Dialog.run() inside the item's activate handler: a nested main loop
inside the AT-SPI DoAction call that pressed it, as mousepad's Save does.

    gtk3-modal.py --state FILE

FILE gets one line per event: "ready", "opened", "response <name>",
"reload" (the padded "Reload      " item), "stored <name>" (the Store
button, enabled 300 ms after the file name changes, as a file chooser's
Save is)."""
import argparse
import sys

import gi
gi.require_version('Gtk', '3.0')
from gi.repository import GLib, Gtk  # noqa: E402  (after require_version)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--state', required=True)
    args = ap.parse_args()

    def note(line):
        with open(args.state, 'a') as f:
            f.write(line + '\n')

    win = Gtk.Window(title='deskd modal')
    win.set_default_size(360, 200)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    bar = Gtk.MenuBar()
    file_item = Gtk.MenuItem(label='File')
    menu = Gtk.Menu()
    save = Gtk.MenuItem(label='Save…')
    menu.append(save)
    # Padded as mousepad's items are (the accelerator's column).
    reload_item = Gtk.MenuItem(label='Reload      ')
    reload_item.connect('activate', lambda _i: note('reload'))
    menu.append(reload_item)
    # A submenu that never opens (its item takes no selection and no
    # activation), for an expand that changes nothing.
    recent = Gtk.MenuItem(label='Recent')
    recent_menu = Gtk.Menu()
    recent_menu.append(Gtk.MenuItem(label='none'))
    recent.set_submenu(recent_menu)
    recent.connect('select', lambda i: i.deselect())
    recent.connect('activate', lambda i: i.stop_emission_by_name('activate'))
    menu.append(recent)
    file_item.set_submenu(menu)
    bar.append(file_item)
    box.pack_start(bar, False, False, 0)
    box.pack_start(Gtk.Label(label='body'), True, True, 0)
    # As a file chooser's: Store is enabled a moment (300 ms) after the
    # name changes, and Never is never enabled.
    entry = Gtk.Entry()
    entry.get_accessible().set_name('File name')
    store = Gtk.Button(label='Store')
    store.set_sensitive(False)
    never = Gtk.Button(label='Never')
    never.set_sensitive(False)

    def name_changed(_e):
        store.set_sensitive(False)
        GLib.timeout_add(300, lambda: store.set_sensitive(bool(entry.get_text())) and False)

    entry.connect('changed', name_changed)
    store.connect('clicked', lambda _b: note('stored ' + entry.get_text()))
    for w in (entry, store, never):
        box.pack_start(w, False, False, 0)
    win.add(box)

    def on_save(_item):
        dlg = Gtk.Dialog(title='Save As', transient_for=win, modal=True)
        dlg.add_buttons('Cancel', Gtk.ResponseType.CANCEL, 'Keep', Gtk.ResponseType.OK)
        dlg.get_content_area().add(Gtk.Label(label='Save the file?'))
        dlg.show_all()
        note('opened')
        r = dlg.run()   # the nested loop, inside the press
        note('response ' + ('ok' if r == Gtk.ResponseType.OK else 'cancel' if r == Gtk.ResponseType.CANCEL else str(int(r))))
        dlg.destroy()

    save.connect('activate', on_save)
    win.connect('destroy', lambda _w: Gtk.main_quit())
    win.show_all()
    note('ready')
    Gtk.main()
    return 0


if __name__ == '__main__':
    sys.exit(main())
