"""Screenshot of a ``teamgym inspect`` report in headless Chromium (the picture in the README and docs/inspect.md).

teamgym train --steps 2 --set save_batches=true --output-dir /tmp/run && teamgym inspect /tmp/run
python scripts/inspect_screenshot.py /tmp/run/report.html docs/images/inspect_report.png --episode s0-3
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.chromium import Chromium  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the HTML report")
    parser.add_argument("output", type=Path, help="the PNG to write")
    parser.add_argument("--episode", default=None, help="open this episode first (default: the first one)")
    parser.add_argument("--tab", default="episodes", choices=("episodes", "rows", "overview"))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    with Chromium(width=args.width, height=args.height) as browser:
        page = browser.open(args.report.resolve().as_uri() + f"#{args.tab}")
        page.wait_until("document.body.dataset.ready === '1'")
        if args.episode is not None:
            page.evaluate(
                f"document.querySelector('#episode-list .ep[data-episode={json.dumps(args.episode)}]').click()"
            )
        if page.console_errors:
            raise SystemExit(f"the page logged errors: {page.console_errors}")
        page.screenshot(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
