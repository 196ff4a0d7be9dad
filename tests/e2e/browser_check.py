"""Opens gpt-report pages in headless Chromium, driven over --remote-debugging-pipe (the DevTools
protocol, standard library only), and records what a user's browser would show.

  browser_check.py OUT.json PAGE.html [--screenshot PAGE2.html PNG]...

OUT.json gets {"check": the page's self-check (what each plot drew), "console": console messages
and uncaught exceptions of level error, "requests": every URL the page asked for}. With
each --screenshot, PAGE2 is also loaded in the same browser and captured whole into PNG.
"""
import base64
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix='gpt-report-chromium-')
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():  # the pipe protocol: the browser reads fd 3, writes fd 4
            r, w = os.dup(to_child_r), os.dup(from_child_w)  # above 4, whatever the pipes got
            os.dup2(r, 3)
            os.dup2(w, 4)

        exe = shutil.which('chromium') or shutil.which('chromium-browser')
        if not exe:
            raise SystemExit('chromium not found (Debian package chromium)')
        self.proc = subprocess.Popen(
            [exe, '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
             '--disable-component-update', '--disable-sync', '--no-first-run',
             '--disable-dev-shm-usage', '--user-data-dir=' + self.profile,
             '--remote-debugging-pipe', 'about:blank'],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.profile, "stderr.txt"), "w"))
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b''
        self.next_id = 0
        self.events = []

    def _read(self, deadline):
        while b'\0' not in self.buf:
            if time.time() > deadline:
                raise SystemExit('chromium did not answer in time')
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                raise SystemExit('chromium closed the pipe')
            self.buf += chunk
        msg, self.buf = self.buf.split(b'\0', 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        m = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session:
            m['sessionId'] = session
        os.write(self.to_child, json.dumps(m).encode() + b'\0')
        deadline = time.time() + timeout
        while True:
            r = self._read(deadline)
            if r.get('id') == self.next_id:
                if 'error' in r:
                    raise SystemExit(f'{method}: {r["error"]}')
                return r.get('result', {})
            self.events.append(r)

    def wait_event(self, method, session, timeout=60):
        deadline = time.time() + timeout
        for i, e in enumerate(self.events):
            if e.get('method') == method and e.get('sessionId') == session:
                del self.events[i]
                return e
        while True:
            e = self._read(deadline)
            if e.get('method') == method and e.get('sessionId') == session:
                return e
            self.events.append(e)

    def page(self):
        target = self.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        s = self.send('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        for domain in ('Page', 'Runtime', 'Log', 'Network'):
            self.send(domain + '.enable', session=s)
        self.send('Emulation.setDeviceMetricsOverride',
                  {'width': 1280, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False}, session=s)
        return s

    def load(self, s, path):
        self.send('Page.navigate', {'url': pathlib.Path(path).resolve().as_uri()}, session=s)
        self.wait_event('Page.loadEventFired', s)

    def close(self):
        try:
            self.send('Browser.close', timeout=10)
        except (SystemExit, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if os.environ.get("BROWSER_CHECK_KEEP"): print(open(os.path.join(self.profile, "stderr.txt")).read()[-3000:])
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    out, page = sys.argv[1], sys.argv[2]
    b = Browser()
    try:
        s = b.page()
        b.load(s, page)
        check = b.send('Runtime.evaluate', {
            'expression': "document.getElementById('self-check').textContent",
            'returnByValue': True}, session=s)['result'].get('value', '')
        console, requests = [], []
        for e in b.events:
            m, p = e.get('method'), e.get('params', {})
            if m == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
                console.append(' '.join(str(a.get('value', a.get('description'))) for a in p['args']))
            elif m == 'Runtime.exceptionThrown':
                console.append(p['exceptionDetails'].get('exception', {}).get('description', 'exception'))
            elif m == 'Log.entryAdded' and p['entry'].get('level') == 'error':
                console.append(p['entry'].get('text', ''))
            elif m == 'Network.requestWillBeSent':
                requests.append(p['request']['url'])
        result = {'check': json.loads(check) if check else None, 'console': console,
                  'requests': requests}
        for i, arg in enumerate(sys.argv):
            if arg != '--screenshot':
                continue
            s2 = b.page()
            b.load(s2, sys.argv[i + 1])
            shot = b.send('Page.captureScreenshot', {'format': 'png', 'captureBeyondViewport': True},
                          session=s2)
            pathlib.Path(sys.argv[i + 2]).write_bytes(base64.b64decode(shot['data']))
        pathlib.Path(out).write_text(json.dumps(result, indent=1))
    finally:
        b.close()


if __name__ == '__main__':
    main()
