#!/bin/sh
# makensis that builds 64-bit installers. CPack (3.25) splits
# CPACK_NSIS_EXECUTABLE_PRE_ARGUMENTS at spaces, so `-XTarget amd64-unicode` cannot be
# passed through it; CPACK_NSIS_EXECUTABLE points here on Linux hosts instead.
exec makensis "-XTarget amd64-unicode" "$@"
