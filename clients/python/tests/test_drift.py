"""The drift test: docs/openapi.json against the SDK's routes and models."""

import copy
import json
import os
import unittest

from tests.drift import drift

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "openapi.json")


def load() -> dict:
    with open(DOC, encoding="utf-8") as f:
        return json.load(f)


class DriftTest(unittest.TestCase):
    def test_the_sdk_covers_docs_openapi_json(self):
        self.assertEqual(drift(load()), [])

    def test_a_route_a_parameter_and_fields_added_to_a_copy_fail_it(self):
        doc = copy.deepcopy(load())
        doc["paths"]["/v1/sessions/{id}/branches"] = {
            "post": {"operationId": "createBranch", "responses": {"201": {"description": "the branch"}}}
        }
        doc["paths"]["/v1/sessions"]["get"]["parameters"].append({"name": "sort_by", "in": "query", "schema": {"type": "string"}})
        doc["components"]["schemas"]["Session"]["properties"]["branch_id"] = {"type": ["string", "null"]}
        doc["components"]["schemas"]["CreateSessionRequest"]["properties"]["pause_after_seconds"] = {"type": "integer"}
        doc["components"]["schemas"]["Diagnosis"]["properties"]["events"]["items"]["properties"]["actor"] = {"type": "string"}
        doc["components"]["schemas"]["AppRequest"]["properties"]["user"] = {"type": "string"}
        problems = "\n".join(drift(doc))
        for want in [
            "route POST /v1/sessions/{id}/branches (createBranch) is in the document but not in the SDK's ROUTES",
            "query parameter sort_by of GET /v1/sessions is not sent by the SDK",
            "field branch_id of Session is missing from Session",
            "request field pause_after_seconds of POST /v1/sessions is not an argument of sessions.create",
            "field actor of Diagnosis.events is missing from DiagnosisEvent",
            "field user of AppRequest is missing from AppRequest",
        ]:
            self.assertIn(want, problems)

    def test_the_version_is_the_documents(self):
        doc = load()
        doc["info"]["version"] = "2.0.0"
        self.assertIn("the document is version 2.0.0", "\n".join(drift(doc)))


if __name__ == "__main__":
    unittest.main()
