import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import field_rules_pb2 as _field_rules_pb2
from messaging.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueuedReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUEUED_REASON_UNSPECIFIED: _ClassVar[QueuedReason]
    QUEUED_REASON_SENDER_RATE: _ClassVar[QueuedReason]
    QUEUED_REASON_RECIPIENT_PAIR_RATE: _ClassVar[QueuedReason]
    QUEUED_REASON_DAILY_LIMIT: _ClassVar[QueuedReason]

class MessageStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_STATUS_UNSPECIFIED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_ACCEPTED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_SENT: _ClassVar[MessageStatus]
    MESSAGE_STATUS_DELIVERED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_READ: _ClassVar[MessageStatus]
    MESSAGE_STATUS_FAILED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_SCHEDULED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_CANCELED: _ClassVar[MessageStatus]
QUEUED_REASON_UNSPECIFIED: QueuedReason
QUEUED_REASON_SENDER_RATE: QueuedReason
QUEUED_REASON_RECIPIENT_PAIR_RATE: QueuedReason
QUEUED_REASON_DAILY_LIMIT: QueuedReason
MESSAGE_STATUS_UNSPECIFIED: MessageStatus
MESSAGE_STATUS_ACCEPTED: MessageStatus
MESSAGE_STATUS_SENT: MessageStatus
MESSAGE_STATUS_DELIVERED: MessageStatus
MESSAGE_STATUS_READ: MessageStatus
MESSAGE_STATUS_FAILED: MessageStatus
MESSAGE_STATUS_SCHEDULED: MessageStatus
MESSAGE_STATUS_CANCELED: MessageStatus

class SendMessageRequest(_message.Message):
    __slots__ = ("to", "sender", "template", "send_at", "ttl_seconds")
    TO_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SEND_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    to: str
    sender: str
    template: SendMessageTemplate
    send_at: _timestamp_pb2.Timestamp
    ttl_seconds: int
    def __init__(self, to: _Optional[str] = ..., sender: _Optional[str] = ..., template: _Optional[_Union[SendMessageTemplate, _Mapping]] = ..., send_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class SendMessageTemplate(_message.Message):
    __slots__ = ("id", "variables", "flow")
    class VariablesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    VARIABLES_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    id: str
    variables: _containers.ScalarMap[str, str]
    flow: SendMessageTemplateFlow
    def __init__(self, id: _Optional[str] = ..., variables: _Optional[_Mapping[str, str]] = ..., flow: _Optional[_Union[SendMessageTemplateFlow, _Mapping]] = ...) -> None: ...

class SendMessageTemplateFlow(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: str
    def __init__(self, token: _Optional[str] = ...) -> None: ...

class SendMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class BatchSendMessagesRequest(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[SendMessageRequest]
    def __init__(self, messages: _Optional[_Iterable[_Union[SendMessageRequest, _Mapping]]] = ...) -> None: ...

class BatchSendMessagesResponse(_message.Message):
    __slots__ = ("results", "accepted_count", "refused_count")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REFUSED_COUNT_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchSendMessagesResult]
    accepted_count: int
    refused_count: int
    def __init__(self, results: _Optional[_Iterable[_Union[BatchSendMessagesResult, _Mapping]]] = ..., accepted_count: _Optional[int] = ..., refused_count: _Optional[int] = ...) -> None: ...

class BatchSendMessagesResult(_message.Message):
    __slots__ = ("index", "message", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    message: Message
    error: BatchSendMessagesError
    def __init__(self, index: _Optional[int] = ..., message: _Optional[_Union[Message, _Mapping]] = ..., error: _Optional[_Union[BatchSendMessagesError, _Mapping]] = ...) -> None: ...

class BatchSendMessagesError(_message.Message):
    __slots__ = ("code", "message", "details")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    details: _struct_pb2.Struct
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class CancelMessageRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CancelMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "status", "to")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    status: MessageStatus
    to: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., status: _Optional[_Union[MessageStatus, str]] = ..., to: _Optional[str] = ...) -> None: ...

class ListMessagesResponse(_message.Message):
    __slots__ = ("object", "data", "total", "next_page_token")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Message]
    total: int
    next_page_token: str
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., total: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("message_id", "object", "to", "sender", "template_id", "flow_token", "status", "wa_message_id", "error", "credits", "created_at", "sent_at", "delivered_at", "read_at", "failed_at", "send_at", "valid_until", "canceled_at", "queued_reason", "estimated_send_at")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WA_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_AT_FIELD_NUMBER: _ClassVar[int]
    READ_AT_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    SEND_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_FIELD_NUMBER: _ClassVar[int]
    CANCELED_AT_FIELD_NUMBER: _ClassVar[int]
    QUEUED_REASON_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_SEND_AT_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    object: str
    to: str
    sender: str
    template_id: str
    flow_token: str
    status: MessageStatus
    wa_message_id: str
    error: MessageError
    credits: int
    created_at: _timestamp_pb2.Timestamp
    sent_at: _timestamp_pb2.Timestamp
    delivered_at: _timestamp_pb2.Timestamp
    read_at: _timestamp_pb2.Timestamp
    failed_at: _timestamp_pb2.Timestamp
    send_at: _timestamp_pb2.Timestamp
    valid_until: _timestamp_pb2.Timestamp
    canceled_at: _timestamp_pb2.Timestamp
    queued_reason: QueuedReason
    estimated_send_at: _timestamp_pb2.Timestamp
    def __init__(self, message_id: _Optional[str] = ..., object: _Optional[str] = ..., to: _Optional[str] = ..., sender: _Optional[str] = ..., template_id: _Optional[str] = ..., flow_token: _Optional[str] = ..., status: _Optional[_Union[MessageStatus, str]] = ..., wa_message_id: _Optional[str] = ..., error: _Optional[_Union[MessageError, _Mapping]] = ..., credits: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., delivered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., read_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., failed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., send_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., canceled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., queued_reason: _Optional[_Union[QueuedReason, str]] = ..., estimated_send_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MessageError(_message.Message):
    __slots__ = ("code", "title", "reason")
    CODE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    title: str
    reason: str
    def __init__(self, code: _Optional[int] = ..., title: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
