from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.api_key_summary import ApiKeySummary


T = TypeVar("T", bound="GetMeResponse")


@_attrs_define
class GetMeResponse:
    """Response of GetMe (spec §Resources, "API key (as reported by GET /v1/me)").

    Attributes:
        account_id (str): Workspace the key belongs to. Shape: UUID.
        key (ApiKeySummary | None): The key that made the call.
        rate_limit_per_min (int): Requests per minute allowed for this key: 30 by default, at most 100.
    """

    account_id: str
    key: ApiKeySummary | None
    rate_limit_per_min: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.api_key_summary import ApiKeySummary

        account_id = self.account_id

        key: dict[str, Any] | None
        if isinstance(self.key, ApiKeySummary):
            key = self.key.to_dict()
        else:
            key = self.key

        rate_limit_per_min = self.rate_limit_per_min

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "account_id": account_id,
                "key": key,
                "rate_limit_per_min": rate_limit_per_min,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.api_key_summary import ApiKeySummary

        d = dict(src_dict)
        account_id = d.pop("account_id")

        def _parse_key(data: object) -> ApiKeySummary | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                key_type_0 = ApiKeySummary.from_dict(data)

                return key_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApiKeySummary | None, data)

        key = _parse_key(d.pop("key"))

        rate_limit_per_min = d.pop("rate_limit_per_min")

        get_me_response = cls(
            account_id=account_id,
            key=key,
            rate_limit_per_min=rate_limit_per_min,
        )

        get_me_response.additional_properties = d
        return get_me_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
