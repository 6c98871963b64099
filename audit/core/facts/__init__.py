"""The facts of findings, as the wording needs them: dataclasses only, no detection.

The detectors above (anomalies/, conflicts/, health/) compute them and wording/ words them, so
the words never import the detectors that call the words.
"""
