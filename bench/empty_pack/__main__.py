"""The benchmark's floor pack: `PolicyPack` with one resource policy that does nothing.

`pulumi_policy.PolicyPack` refuses an empty policy list ("Missing policies argument"), so the floor is
one `ResourceValidationPolicy` whose `validate` returns at once. Every resource still crosses the wire
twice (Remediate, Analyze) and is deserialized as for any resource policy; AnalyzeStack has no stack
policy to run. Whatever the real pack costs beyond this is its rules.
"""

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)


def _nothing(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    return None


PolicyPack(
    name="bench-floor",
    policies=[
        ResourceValidationPolicy(
            name="bench-nothing",
            description="Does nothing: the floor of the policy protocol.",
            validate=_nothing,
        )
    ],
    enforcement_level=EnforcementLevel.ADVISORY,
)
