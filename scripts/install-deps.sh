#!/usr/bin/env bash
# Installs the Debian packages hbird needs to build, test and benchmark.
# Does nothing when they are all present; needs root (or sudo) otherwise.
set -euo pipefail

packages=(
	build-essential
	postgresql-15
	postgresql-server-dev-15
	libpq-dev
	postgresql-common
	postgresql-plpython3-15
	libopenblas-dev
	libprotobuf-c-dev
	protobuf-c-compiler
	libxgboost-dev
	python3-xgboost
	python3-sklearn
	python3-numpy
	python3-psycopg
	python3-psycopg2
	python3-pandas
	python3-onnx
	python3-setuptools
	python3-wheel
	python3-venv
	clang
	libclang-rt-dev
	valgrind
	# the TAP tests (test/t): PostgreSQL::Test::Cluster runs commands with IPC::Run
	libipc-run-perl
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
