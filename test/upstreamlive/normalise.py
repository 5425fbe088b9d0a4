#!/usr/bin/env python3
"""placeholder; replaced below"""
import sys
if "--table-header" in sys.argv:
    print("| case |")
    print("|---|")
    sys.exit(0)
sys.exit(1)
