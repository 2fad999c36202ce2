#!/usr/bin/python3
# A GTK3 text view for the input tests: Escape appends the buffer's text to
# the records file (one JSON string per line) and clears the buffer.
import json, os, sys
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk, Gdk

out = sys.argv[1]
win = Gtk.Window(title='deskd gtk text')
win.set_default_size(900, 600)
win.move(0, 0)
view = Gtk.TextView()
view.set_accepts_tab(True)
win.add(view)

def on_key(widget, event):
    if event.keyval == Gdk.KEY_Escape:
        buf = view.get_buffer()
        text = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), True)
        with open(out, 'a', encoding='utf-8') as f:
            f.write(json.dumps(text) + '\n')
        buf.set_text('')
        return True
    return False

view.connect('key-press-event', on_key)
win.connect('destroy', Gtk.main_quit)
win.show_all()
view.grab_focus()
open(out + '.ready', 'w').close()
Gtk.main()
