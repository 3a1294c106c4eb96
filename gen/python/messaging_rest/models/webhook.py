from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Webhook")


@_attrs_define
class Webhook:
    """A webhook endpoint (spec §Resources, "Webhook endpoint").

    Attributes:
        id (str): Endpoint identifier. Shape: whk_<uuid>.
        object_ (str): Always "webhook".
        name (str): Name given in the console.
        url (str): HTTPS URL the events are POSTed to.
        secret_hint (str): Masked signing secret: "whsec_", its first four characters, an ellipsis,
            its last four. The secret itself is never returned.
        events (list[str]): Event types the endpoint receives, for example "message.delivered".
        enabled (bool): False once disabled.
        disabled_reason (None | str): Recorded reason when disabled; null otherwise.
        last_success_at (datetime.datetime | None): Time of the last successful delivery; null if none.
    """

    id: str
    object_: str
    name: str
    url: str
    secret_hint: str
    events: list[str]
    enabled: bool
    disabled_reason: None | str
    last_success_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        name = self.name

        url = self.url

        secret_hint = self.secret_hint

        events = self.events

        enabled = self.enabled

        disabled_reason: None | str
        disabled_reason = self.disabled_reason

        last_success_at: None | str
        if isinstance(self.last_success_at, datetime.datetime):
            last_success_at = self.last_success_at.isoformat()
        else:
            last_success_at = self.last_success_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "name": name,
                "url": url,
                "secret_hint": secret_hint,
                "events": events,
                "enabled": enabled,
                "disabled_reason": disabled_reason,
                "last_success_at": last_success_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        object_ = d.pop("object")

        name = d.pop("name")

        url = d.pop("url")

        secret_hint = d.pop("secret_hint")

        events = cast(list[str], d.pop("events"))

        enabled = d.pop("enabled")

        def _parse_disabled_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason"))

        def _parse_last_success_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_success_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_success_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_success_at = _parse_last_success_at(d.pop("last_success_at"))

        webhook = cls(
            id=id,
            object_=object_,
            name=name,
            url=url,
            secret_hint=secret_hint,
            events=events,
            enabled=enabled,
            disabled_reason=disabled_reason,
            last_success_at=last_success_at,
        )

        webhook.additional_properties = d
        return webhook

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
