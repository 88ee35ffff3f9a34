"""Screenshots of a report page in headless Chromium (skipped where it is not installed)."""

import os
import shutil
import subprocess


def chromium():
    """The Chromium executable on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def render_in_chromium(page, shot, width, height):
    """Screenshot ``page`` in headless Chromium at ``width`` x ``height``; return the PNG bytes
    after checking they are a PNG laid out at the window's size."""
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--screenshot={shot}", f"--window-size={width},{height}",
         f"file://{os.path.abspath(page)}"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # Width and height from the IHDR chunk: the page was laid out at the window's size.
    assert int.from_bytes(data[16:20], "big") == width
    assert int.from_bytes(data[20:24], "big") == height
    return data
