# Sandman's commands. `make test` and `make run` are the two a newcomer needs.
SHELL := /bin/bash
GO    ?= go
FUNCTIONS := sessions status resume snapshot reconnect webhook idlepause

.PHONY: test lint build clean

## test: every test, against a throwaway DynamoDB Local, with -race
test:
	bash scripts/test.sh

## lint: gofmt, go vet, staticcheck, go mod tidy diff
lint:
	bash scripts/lint.sh

## build: one linux/arm64 `bootstrap` per Lambda function under build/lambda/<name>/
build:
	@for fn in $(FUNCTIONS); do \
	  echo "build $$fn"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o build/lambda/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done

clean:
	rm -rf build cdk.out
