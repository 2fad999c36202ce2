#!/usr/bin/env python3
# A Wayland-native GTK 3 probe for the wayland tests (GDK_BACKEND=wayland):
# the top 400 px are a drawing area painted green (20,200,40) with a blue
# (40,60,230) box at 100,50 200x100; every button press on it is logged as
# "click X Y BUTTON" in the area's coordinates to LOG (a double click's second
# press also as "double X Y BUTTON"), with "mods X Y NAMES" when modifiers
# are held (NAMES: shift,ctrl,alt,super joined by commas); with a button
# down, motion as "motion X Y" and the release as "release X Y BUTTON";
# wheel notches as "scroll up|down|left|right". Key presses anywhere in the
# window: "key KEYVAL-NAME NAMES" (NAMES: "-" when none). Below, a text
# view whose whole text is written to TEXT (atomically) on every change.
# "ready" goes to LOG after the first frame is drawn.
# Usage: wl_probe.py LOG TEXT
import os
import sys

import gi
gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk  # noqa: E402

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


MODS = ((Gdk.ModifierType.SHIFT_MASK, "shift"), (Gdk.ModifierType.CONTROL_MASK, "ctrl"),
        (Gdk.ModifierType.MOD1_MASK, "alt"), (Gdk.ModifierType.SUPER_MASK, "super"))


def mod_names(state):
    return ",".join(name for mask, name in MODS if state & mask)


# In the drawing area's own coordinates: on sway (no client decorations) it
# is the window's top-left; on GNOME GTK draws a title bar and shadows
# around it, and the tests find the area on screen by its pixels.
def at(widget, event):
    return int(event.x), int(event.y)


def press(widget, event):
    x, y = at(widget, event)
    if event.type == Gdk.EventType._2BUTTON_PRESS:
        log.write("double %d %d %d\n" % (x, y, event.button))
        return True
    if event.type != Gdk.EventType.BUTTON_PRESS:
        return True
    log.write("click %d %d %d\n" % (x, y, event.button))
    if mod_names(event.state):
        log.write("mods %d %d %s\n" % (x, y, mod_names(event.state)))
    return True


def release(widget, event):
    x, y = at(widget, event)
    log.write("release %d %d %d\n" % (x, y, event.button))
    return True


def motion(widget, event):
    x, y = at(widget, event)
    log.write("motion %d %d\n" % (x, y))
    return True


def scroll(widget, event):
    names = {Gdk.ScrollDirection.UP: "up", Gdk.ScrollDirection.DOWN: "down",
             Gdk.ScrollDirection.LEFT: "left", Gdk.ScrollDirection.RIGHT: "right"}
    if event.direction in names:
        log.write("scroll %s\n" % names[event.direction])
    return True


def key(widget, event):
    log.write("key %s %s\n" % (Gdk.keyval_name(event.keyval), mod_names(event.state) or "-"))
    return False


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
area.add_events(Gdk.EventMask.BUTTON_PRESS_MASK | Gdk.EventMask.BUTTON_RELEASE_MASK
                | Gdk.EventMask.BUTTON_MOTION_MASK | Gdk.EventMask.SCROLL_MASK)
area.connect("draw", draw)
area.connect("button-press-event", press)
area.connect("button-release-event", release)
area.connect("motion-notify-event", motion)
area.connect("scroll-event", scroll)
win.connect("key-press-event", key)
view = Gtk.TextView()
view.get_buffer().connect("changed", changed)
box.pack_start(area, False, False, 0)
box.pack_start(view, True, True, 0)
win.add(box)
win.show_all()
# Every motion, not one per frame: a drag's path is checked point by point,
# and under load (or ASan) GTK's frames are few.
for w in (win.get_window(), area.get_window()):
    w.set_event_compression(False)
Gtk.main()
