from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.message_status import MessageStatus
from ..models.queued_reason import QueuedReason

if TYPE_CHECKING:
    from ..models.message_error import MessageError


T = TypeVar("T", bound="Message")


@_attrs_define
class Message:
    """A message as read back by the key that sent it.

    Attributes:
        message_id (str): Message identifier. Shape: msg_<uuid>.
        object_ (str): Always "message".
        to (str): Recipient number, digits only with country code.
        sender (str): Sender it was sent from. Shape: snd_<uuid>.
        template_id (str): Template it was sent with. Shape: tpl_<uuid>.
        flow_token (None | str): Flow token of the form the template carries; null if it carries none.
        status (MessageStatus | None): Current status; never moves backwards.
        wa_message_id (None | str): Identifier assigned by the messaging network; null until it accepts it.
        error (MessageError | None): Null unless failed: the network's error code and title.
        credits_ (int): Credits spent on the message.
        created_at (datetime.datetime | None): When the service accepted the message.
        sent_at (datetime.datetime | None): When the network accepted it; null until then.
        delivered_at (datetime.datetime | None): When it reached the handset; null until then.
        read_at (datetime.datetime | None): When the recipient opened it; null unless read receipts are on.
        failed_at (datetime.datetime | None): When it failed; null unless failed.
        send_at (datetime.datetime | None): When it is to be handed to the network (the send's send_at); null unless
            it was sent scheduled.
        valid_until (datetime.datetime | None): Until when it may be handed to the network (created_at, or send_at when
            scheduled, plus the send's ttl_seconds); not handed by then, it fails
            with error reason "expired". Null for messages accepted before validity
            was kept.
        canceled_at (datetime.datetime | None): When it was canceled; null unless canceled.
        queued_reason (None | QueuedReason): While an accepted message waits for its turn under the network's limits
            (README "Pacing"): why; null once it left, or when it never waited.
        estimated_send_at (datetime.datetime | None): While it waits: when it is expected to be handed to the network.
    """

    message_id: str
    object_: str
    to: str
    sender: str
    template_id: str
    flow_token: None | str
    status: MessageStatus | None
    wa_message_id: None | str
    error: MessageError | None
    credits_: int
    created_at: datetime.datetime | None
    sent_at: datetime.datetime | None
    delivered_at: datetime.datetime | None
    read_at: datetime.datetime | None
    failed_at: datetime.datetime | None
    send_at: datetime.datetime | None
    valid_until: datetime.datetime | None
    canceled_at: datetime.datetime | None
    queued_reason: None | QueuedReason
    estimated_send_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.message_error import MessageError

        message_id = self.message_id

        object_ = self.object_

        to = self.to

        sender = self.sender

        template_id = self.template_id

        flow_token: None | str
        flow_token = self.flow_token

        status: None | str
        if isinstance(self.status, MessageStatus):
            status = self.status.value
        else:
            status = self.status

        wa_message_id: None | str
        wa_message_id = self.wa_message_id

        error: dict[str, Any] | None
        if isinstance(self.error, MessageError):
            error = self.error.to_dict()
        else:
            error = self.error

        credits_ = self.credits_

        created_at: None | str
        if isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        sent_at: None | str
        if isinstance(self.sent_at, datetime.datetime):
            sent_at = self.sent_at.isoformat()
        else:
            sent_at = self.sent_at

        delivered_at: None | str
        if isinstance(self.delivered_at, datetime.datetime):
            delivered_at = self.delivered_at.isoformat()
        else:
            delivered_at = self.delivered_at

        read_at: None | str
        if isinstance(self.read_at, datetime.datetime):
            read_at = self.read_at.isoformat()
        else:
            read_at = self.read_at

        failed_at: None | str
        if isinstance(self.failed_at, datetime.datetime):
            failed_at = self.failed_at.isoformat()
        else:
            failed_at = self.failed_at

        send_at: None | str
        if isinstance(self.send_at, datetime.datetime):
            send_at = self.send_at.isoformat()
        else:
            send_at = self.send_at

        valid_until: None | str
        if isinstance(self.valid_until, datetime.datetime):
            valid_until = self.valid_until.isoformat()
        else:
            valid_until = self.valid_until

        canceled_at: None | str
        if isinstance(self.canceled_at, datetime.datetime):
            canceled_at = self.canceled_at.isoformat()
        else:
            canceled_at = self.canceled_at

        queued_reason: None | str
        if isinstance(self.queued_reason, QueuedReason):
            queued_reason = self.queued_reason.value
        else:
            queued_reason = self.queued_reason

        estimated_send_at: None | str
        if isinstance(self.estimated_send_at, datetime.datetime):
            estimated_send_at = self.estimated_send_at.isoformat()
        else:
            estimated_send_at = self.estimated_send_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "object": object_,
                "to": to,
                "sender": sender,
                "template_id": template_id,
                "flow_token": flow_token,
                "status": status,
                "wa_message_id": wa_message_id,
                "error": error,
                "credits": credits_,
                "created_at": created_at,
                "sent_at": sent_at,
                "delivered_at": delivered_at,
                "read_at": read_at,
                "failed_at": failed_at,
                "send_at": send_at,
                "valid_until": valid_until,
                "canceled_at": canceled_at,
                "queued_reason": queued_reason,
                "estimated_send_at": estimated_send_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.message_error import MessageError

        d = dict(src_dict)
        message_id = d.pop("message_id")

        object_ = d.pop("object")

        to = d.pop("to")

        sender = d.pop("sender")

        template_id = d.pop("template_id")

        def _parse_flow_token(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        flow_token = _parse_flow_token(d.pop("flow_token"))

        def _parse_status(data: object) -> MessageStatus | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = MessageStatus(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MessageStatus | None, data)

        status = _parse_status(d.pop("status"))

        def _parse_wa_message_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        wa_message_id = _parse_wa_message_id(d.pop("wa_message_id"))

        def _parse_error(data: object) -> MessageError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = MessageError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MessageError | None, data)

        error = _parse_error(d.pop("error"))

        credits_ = d.pop("credits")

        def _parse_created_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_at_type_0 = datetime.datetime.fromisoformat(data)

                return created_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_at = _parse_created_at(d.pop("created_at"))

        def _parse_sent_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sent_at_type_0 = datetime.datetime.fromisoformat(data)

                return sent_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        sent_at = _parse_sent_at(d.pop("sent_at"))

        def _parse_delivered_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivered_at_type_0 = datetime.datetime.fromisoformat(data)

                return delivered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at"))

        def _parse_read_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                read_at_type_0 = datetime.datetime.fromisoformat(data)

                return read_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        read_at = _parse_read_at(d.pop("read_at"))

        def _parse_failed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                failed_at_type_0 = datetime.datetime.fromisoformat(data)

                return failed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        failed_at = _parse_failed_at(d.pop("failed_at"))

        def _parse_send_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                send_at_type_0 = datetime.datetime.fromisoformat(data)

                return send_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        send_at = _parse_send_at(d.pop("send_at"))

        def _parse_valid_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                valid_until_type_0 = datetime.datetime.fromisoformat(data)

                return valid_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        valid_until = _parse_valid_until(d.pop("valid_until"))

        def _parse_canceled_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                canceled_at_type_0 = datetime.datetime.fromisoformat(data)

                return canceled_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        canceled_at = _parse_canceled_at(d.pop("canceled_at"))

        def _parse_queued_reason(data: object) -> None | QueuedReason:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                queued_reason_type_0 = QueuedReason(data)

                return queued_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QueuedReason, data)

        queued_reason = _parse_queued_reason(d.pop("queued_reason"))

        def _parse_estimated_send_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                estimated_send_at_type_0 = datetime.datetime.fromisoformat(data)

                return estimated_send_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        estimated_send_at = _parse_estimated_send_at(d.pop("estimated_send_at"))

        message = cls(
            message_id=message_id,
            object_=object_,
            to=to,
            sender=sender,
            template_id=template_id,
            flow_token=flow_token,
            status=status,
            wa_message_id=wa_message_id,
            error=error,
            credits_=credits_,
            created_at=created_at,
            sent_at=sent_at,
            delivered_at=delivered_at,
            read_at=read_at,
            failed_at=failed_at,
            send_at=send_at,
            valid_until=valid_until,
            canceled_at=canceled_at,
            queued_reason=queued_reason,
            estimated_send_at=estimated_send_at,
        )

        message.additional_properties = d
        return message

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
