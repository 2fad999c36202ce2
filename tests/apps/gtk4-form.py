#!/usr/bin/python3
"""A GTK 4 form: an entry (Name), a drop-down (Size: Gtk.DropDown), a check
button (Gift wrap) and a Submit button that writes the values as one JSON
line to FILE. GTK 4 has its own AT-SPI code (no ATK): the tests drive it
through deskd's tree and read FILE back.

    gtk4-form.py --out FILE

FILE.ready appears once the window is shown."""
import argparse
import json
import os

import gi
gi.require_version('Gtk', '4.0')
from gi.repository import GLib, Gtk  # noqa: E402  (after require_version)

SIZES = ['Small', 'Medium', 'Large', 'Extra large']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    args = ap.parse_args()

    app = Gtk.Application(application_id=None)

    def activate(_app):
        win = Gtk.ApplicationWindow(application=app, title='deskd gtk4 form')
        win.set_default_size(420, 260)
        grid = Gtk.Grid(row_spacing=8, column_spacing=8, margin_top=12, margin_start=12, margin_end=12)
        name_label = Gtk.Label(label='Name')
        # No accessible labels, as in most apps: GTK 4.8 names the entry and
        # the drop-down by their types; deskd names them by the label before.
        entry = Gtk.Entry()
        size_label = Gtk.Label(label='Size')
        drop = Gtk.DropDown.new_from_strings(SIZES)
        gift = Gtk.CheckButton(label='Gift wrap')
        submit = Gtk.Button(label='Submit')

        def on_submit(_b):
            rec = {'name': entry.get_text(), 'size': SIZES[drop.get_selected()], 'gift': gift.get_active()}
            with open(args.out, 'a', encoding='utf-8') as f:
                f.write(json.dumps(rec, ensure_ascii=False) + '\n')

        submit.connect('clicked', on_submit)
        grid.attach(name_label, 0, 0, 1, 1)
        grid.attach(entry, 1, 0, 1, 1)
        grid.attach(size_label, 0, 1, 1, 1)
        grid.attach(drop, 1, 1, 1, 1)
        grid.attach(gift, 1, 2, 1, 1)
        grid.attach(submit, 1, 3, 1, 1)
        win.set_child(grid)
        win.present()

        def ready():
            with open(args.out + '.ready', 'w') as f:
                f.write(str(os.getpid()))
            return False
        GLib.timeout_add(200, ready)

    app.connect('activate', activate)
    app.run([])


main()
