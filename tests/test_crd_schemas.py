"""gpushare.offline.crd_schemas on its own: how a CRD's openAPIV3Schema is made strict, and which null
fields are pruned before validation (the rules are the module docstring's, from the API server's
structural-schema pruning: apiextensions-apiserver `pkg/apiserver/schema/pruning`, and `nullable`).
tests/test_chart_render.py validates the GPU Operator's real ClusterPolicy; these pin the rules on a
small hand-written schema, expected values written out in full.
"""

from __future__ import annotations

import copy
from typing import Any

from gpushare.offline.crd_schemas import pruned_nulls, strict_crd_schema

STRING = {"type": "string"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "mig": {
                    "type": "object",
                    "nullable": True,
                    "properties": {"strategy": {"type": "string", "enum": ["single", "mixed"]}},
                },
                "env": {"type": "array", "items": {"type": "object", "properties": {"name": STRING}}},
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"a": STRING},
                },
                "labels": {"type": "object", "additionalProperties": STRING},
                "annotations": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "nullable": True},
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
                "choice": {"anyOf": [{"type": "object", "properties": {"x": {"type": "integer"}}}]},
            },
        }
    },
}


def test_object_schemas_listing_properties_reject_other_fields() -> None:
    before = copy.deepcopy(SCHEMA)
    assert strict_crd_schema(SCHEMA) == {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "mig": {  # nullable: null admitted
                        "type": ["object", "null"],
                        "nullable": True,
                        "properties": {"strategy": {"type": "string", "enum": ["single", "mixed"]}},
                        "additionalProperties": False,
                    },
                    "env": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": STRING},
                            "additionalProperties": False,
                        },
                    },
                    # preserve-unknown-fields: left open
                    "extra": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {"a": STRING},
                    },
                    # a map (additionalProperties, no properties): left as it is
                    "labels": {"type": "object", "additionalProperties": STRING},
                    "annotations": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "null"], "nullable": True},
                    },
                    # an embedded resource keeps apiVersion, kind and metadata
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "properties": {
                            "spec": {"type": "object"},
                            "apiVersion": {},
                            "kind": {},
                            "metadata": {},
                        },
                        "additionalProperties": False,
                    },
                    "choice": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {"x": {"type": "integer"}},
                                "additionalProperties": False,
                            }
                        ]
                    },
                },
                "additionalProperties": False,
            }
        },
        "additionalProperties": False,
    }
    assert before == SCHEMA  # the CRD's own schema is left unchanged


def test_null_fields_are_pruned_unless_nullable() -> None:
    value = {
        "spec": {
            "mig": None,  # nullable: kept
            "env": [{"name": None}],  # not nullable: dropped
            "labels": {"a": None},  # a map of strings: dropped
            "annotations": {"a": None},  # a map of nullable strings: kept
            "unknown": None,  # not in the schema: dropped
        }
    }
    assert pruned_nulls(value, SCHEMA) == {
        "spec": {"mig": None, "env": [{}], "labels": {}, "annotations": {"a": None}}
    }
