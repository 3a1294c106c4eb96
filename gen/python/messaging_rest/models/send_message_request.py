from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.send_message_template import SendMessageTemplate


T = TypeVar("T", bound="SendMessageRequest")


@_attrs_define
class SendMessageRequest:
    """Request of SendMessage.

    Attributes:
        to (None | str | Unset): Recipient number: digits only with country code, 8 to 15 digits.

            Rules: required; 8 to 15 digits with country code, without '+', spaces or a leading 0.
        sender (None | str | Unset): Sender to send from. Shape: snd_<uuid>; active and of the workspace
            (with NETWORK=whatsapp: one with a WhatsApp phone number ID).

            Rules: required; an id such as `snd_<uuid>`.
        template (None | SendMessageTemplate | Unset): The template and the values of its variables.

            Rules: required.
        send_at (datetime.datetime | None | Unset): When to hand the message to the network (a scheduled send): in the
            future, at most 30 days ahead. Unset: at once. The credits are spent at
            acceptance; the message is scheduled until then and may be canceled.

            Rules: in the future; at most 30 days (2592000 seconds) ahead.
        ttl_seconds (int | None | Unset): How long the message may wait to be handed to the network, in seconds,
            from its acceptance (or from send_at when scheduled): 1 to 2592000 (30
            days); unset: 86400 (24 hours). A message not handed to the network by
            then (its valid_until) fails with error reason "expired", refunded.

            Rules: from 1 to 2592000.
    """

    to: None | str | Unset = UNSET
    sender: None | str | Unset = UNSET
    template: None | SendMessageTemplate | Unset = UNSET
    send_at: datetime.datetime | None | Unset = UNSET
    ttl_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.send_message_template import SendMessageTemplate

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        sender: None | str | Unset
        if isinstance(self.sender, Unset):
            sender = UNSET
        else:
            sender = self.sender

        template: dict[str, Any] | None | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        elif isinstance(self.template, SendMessageTemplate):
            template = self.template.to_dict()
        else:
            template = self.template

        send_at: None | str | Unset
        if isinstance(self.send_at, Unset):
            send_at = UNSET
        elif isinstance(self.send_at, datetime.datetime):
            send_at = self.send_at.isoformat()
        else:
            send_at = self.send_at

        ttl_seconds: int | None | Unset
        if isinstance(self.ttl_seconds, Unset):
            ttl_seconds = UNSET
        else:
            ttl_seconds = self.ttl_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if to is not UNSET:
            field_dict["to"] = to
        if sender is not UNSET:
            field_dict["sender"] = sender
        if template is not UNSET:
            field_dict["template"] = template
        if send_at is not UNSET:
            field_dict["send_at"] = send_at
        if ttl_seconds is not UNSET:
            field_dict["ttl_seconds"] = ttl_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.send_message_template import SendMessageTemplate

        d = dict(src_dict)

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_sender(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sender = _parse_sender(d.pop("sender", UNSET))

        def _parse_template(data: object) -> None | SendMessageTemplate | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                template_type_0 = SendMessageTemplate.from_dict(data)

                return template_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SendMessageTemplate | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        def _parse_send_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                send_at_type_0 = datetime.datetime.fromisoformat(data)

                return send_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        send_at = _parse_send_at(d.pop("send_at", UNSET))

        def _parse_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttl_seconds", UNSET))

        send_message_request = cls(
            to=to,
            sender=sender,
            template=template,
            send_at=send_at,
            ttl_seconds=ttl_seconds,
        )

        return send_message_request
