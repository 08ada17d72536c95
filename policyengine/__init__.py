"""policyengine: a Kubernetes scheduler whose placement logic is a policy in a small language.

The package is layered (see ARCHITECTURE.md): ``cli`` drives ``controller`` (the
cluster loop), which drives ``engine`` (one scheduling cycle), which evaluates policies through
``schedlib`` (what the language sees of Kubernetes), built on ``lang`` (the language) and
``model`` (Kubernetes objects as plain data), which share only ``diagnostics`` and ``quantity``.
"""

__version__ = "0.1.0"
