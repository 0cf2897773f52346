#!/usr/bin/env python3
"""Reads every module's surefire reports: prints the slowest test classes and every failed test, and exits 1 when a
test failed or errored (or when there are no reports at all). Usage: .ci/test-report.py [SLOWEST]"""
import glob
import sys
import xml.etree.ElementTree as ET

slowest = int(sys.argv[1]) if len(sys.argv) > 1 else 15
classes, failed = [], []
for path in sorted(glob.glob('*/target/surefire-reports/TEST-*.xml')):
    suite = ET.parse(path).getroot()
    classes.append((float(suite.get('time', '0')), suite.get('name'), int(suite.get('tests', '0')),
                    int(suite.get('skipped', '0'))))
    for case in suite.iter('testcase'):
        for kind in ('failure', 'error'):
            for problem in case.findall(kind):
                message = (problem.get('message') or problem.get('type') or '').strip().splitlines()
                failed.append(f"{case.get('classname')}.{case.get('name')}: {kind}: {message[0][:200] if message else ''}")

if not classes:
    print('no surefire reports under */target/surefire-reports')
    sys.exit(1)
total = sum(c[0] for c in classes)
print(f"{len(classes)} test classes, {sum(c[2] for c in classes)} tests ({sum(c[3] for c in classes)} skipped), "
      f"{total:.0f} s in the classes; the {min(slowest, len(classes))} slowest:")
for seconds, name, tests, _ in sorted(classes, reverse=True)[:slowest]:
    print(f"  {seconds:7.1f} s {tests:4d} tests  {name}")
if failed:
    print(f"{len(failed)} failed:")
    for line in failed:
        print('  ' + line)
    sys.exit(1)
print('no test failed')
