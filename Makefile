# Thin wrapper over CMake so the README's two commands work on a fresh machine.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
HSD_SHARED ?= $(abspath ../shared)
export HSD_SHARED

.PHONY: all bootstrap build test demo asan clean format fuzz install

all: build

bootstrap:
	@./scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt: | bootstrap
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: bootstrap $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Installs headers, libhsd.a, libhsd.so, the CLI, hsd.pc and the CMake package under
# $(DESTDIR)$(PREFIX) (both package files are relocatable, so PREFIX needs no reconfigure).
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

demo: build
	./scripts/demo.sh $(BUILD)/hsd

# Address + undefined-behaviour sanitizer build and test run.
asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DHSD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# libFuzzer harnesses (clang, ASan+UBSan) in build-fuzz/, each run for SECONDS (docs/FUZZING.md).
SECONDS ?= 60
fuzz: bootstrap
	./fuzz/run.sh $(SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

clean:
	rm -rf build build-asan build-fuzz
