import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Webhook(_message.Message):
    __slots__ = ("id", "object", "name", "url", "secret_hint", "events", "enabled", "disabled_reason", "last_success_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    SECRET_HINT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_REASON_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESS_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    name: str
    url: str
    secret_hint: str
    events: _containers.RepeatedScalarFieldContainer[str]
    enabled: bool
    disabled_reason: str
    last_success_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., name: _Optional[str] = ..., url: _Optional[str] = ..., secret_hint: _Optional[str] = ..., events: _Optional[_Iterable[str]] = ..., enabled: _Optional[bool] = ..., disabled_reason: _Optional[str] = ..., last_success_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListWebhooksRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListWebhooksResponse(_message.Message):
    __slots__ = ("object", "data", "total")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Webhook]
    total: int
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Webhook, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...
