#!/usr/bin/env python3
# A GTK3 text view for the paste tests: one window (--title) with a
# GtkTextView that has the focus; every change of its buffer is written to
# --state (atomically: a temp file, then rename) as the buffer's exact text,
# so a test reads back what the application got, byte for byte.
import argparse
import os
import sys

try:
    import gi
except ImportError:
    # A python3 first on PATH that is not Debian's (pyenv) lacks python3-gi.
    if os.path.realpath(sys.executable) != os.path.realpath('/usr/bin/python3') \
            and os.access('/usr/bin/python3', os.X_OK):
        os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv)
    raise
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk, GLib  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--state', required=True)
ap.add_argument('--title', default='deskd gtk3 text')
ap.add_argument('--geometry', default='600x400')
args = ap.parse_args()

win = Gtk.Window(title=args.title)
w, h = (int(v) for v in args.geometry.split('x'))
win.set_default_size(w, h)
win.connect('destroy', Gtk.main_quit)
scroll = Gtk.ScrolledWindow()
view = Gtk.TextView()
buf = view.get_buffer()
scroll.add(view)
win.add(scroll)
pending = False


def save():
    global pending
    pending = False
    start, end = buf.get_bounds()
    text = buf.get_text(start, end, True)
    tmp = args.state + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(text.encode('utf-8'))
    os.replace(tmp, args.state)
    return False


def changed(_buf):
    # One write per burst of changes (a paste is one insert; typing is many).
    global pending
    if not pending:
        pending = True
        GLib.idle_add(save)


buf.connect('changed', changed)
win.show_all()
view.grab_focus()
save()
print('ready', flush=True)
sys.exit(Gtk.main())
