"""The pyatspi peer of `make bench`'s a11y rows: a long-running walker, as a
Python agent would run one, that reads name, role, states and extents
(desktop coordinates) of every node of one window by child index: what
deskd's ui_snapshot with all: true reads. Started by deskd (--launch), so it
is on that desktop's AT-SPI bus; it waits for GO (a file) so it never walks
while deskd is being timed, then walks the first frame whose name or app's
name matches TITLE (a regular expression, any case) N + 1 times and writes
{first, times, nodes} as JSON to OUT (the first walk, cache cold, apart).

usage: atspi_walk.py GO OUT TITLE N"""
import json
import os
import re
import sys
import time

import pyatspi


def walk(acc):
    acc.name
    acc.getRole()
    acc.getState().getStates()
    try:
        acc.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    except NotImplementedError:
        pass
    n = 1
    for i in range(acc.childCount):
        child = acc.getChildAtIndex(i)
        if child is not None:
            n += walk(child)
    return n


def find_frame(title):
    # By the frame's name (Chromium's is the page title) or by the app's
    # (gtk3-widget-factory's frame has no name).
    for app in pyatspi.Registry.getDesktop(0):
        if app is None:
            continue
        for i in range(app.childCount):
            frame = app.getChildAtIndex(i)
            if frame is not None and (title.search(frame.name or '') or title.search(app.name or '')):
                return frame
    return None


def main():
    go, out, title, n = sys.argv[1], sys.argv[2], re.compile(sys.argv[3], re.I), int(sys.argv[4])
    deadline = time.monotonic() + 600
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit('atspi_walk: no go file')
        time.sleep(0.05)
    frame = None
    while frame is None and time.monotonic() < deadline:
        frame = find_frame(title)
        if frame is None:
            time.sleep(0.2)
    if frame is None:
        sys.exit('atspi_walk: no frame matches ' + title.pattern)
    times = []
    nodes = 0
    for _ in range(n + 1):
        t0 = time.perf_counter()
        nodes = walk(frame)
        times.append((time.perf_counter() - t0) * 1000)
    tmp = out + '.tmp'
    with open(tmp, 'w') as f:
        json.dump({'first': times[0], 'times': times[1:], 'nodes': nodes}, f)
    os.rename(tmp, out)


main()
