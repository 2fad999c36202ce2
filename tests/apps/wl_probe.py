#!/usr/bin/env python3
# A Wayland-native GTK 3 probe for the wayland tests (GDK_BACKEND=wayland):
# the top 400 px are a drawing area painted green (20,200,40) with a blue
# (40,60,230) box at 100,50 200x100; every button press on it is logged as
# "click X Y BUTTON" in window coordinates to LOG. Below, a text view whose
# whole text is written to TEXT (atomically) on every change. "ready" goes
# to LOG after the first frame is drawn.
# Usage: wl_probe.py LOG TEXT
import os
import sys

import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

log_path, text_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)


def draw(widget, cr):
    cr.set_source_rgb(20 / 255, 200 / 255, 40 / 255)
    cr.paint()
    cr.set_source_rgb(40 / 255, 60 / 255, 230 / 255)
    cr.rectangle(100, 50, 200, 100)
    cr.fill()
    if not getattr(draw, "said", False):
        draw.said = True
        log.write("ready\n")
    return False


def press(widget, event):
    x, y = widget.translate_coordinates(widget.get_toplevel(), int(event.x), int(event.y))
    log.write("click %d %d %d\n" % (x, y, event.button))
    return True


def changed(buf):
    text = buf.get_text(buf.get_start_iter(), buf.get_end_iter(), True)
    tmp = text_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, text_path)


# No blinking text cursor: a still probe repaints nothing (the capture
# tests check that change counters stay put while nothing happens).
Gtk.Settings.get_default().set_property("gtk-cursor-blink", False)
win = Gtk.Window(title="wl-probe")
win.connect("destroy", Gtk.main_quit)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
area = Gtk.DrawingArea()
area.set_size_request(600, 400)
area.add_events(2 ** 8)  # GDK_BUTTON_PRESS_MASK
area.connect("draw", draw)
area.connect("button-press-event", press)
view = Gtk.TextView()
view.get_buffer().connect("changed", changed)
box.pack_start(area, False, False, 0)
box.pack_start(view, True, True, 0)
win.add(box)
win.show_all()
Gtk.main()
