from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetMeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMeResponse(_message.Message):
    __slots__ = ("account_id", "key", "rate_limit_per_min")
    ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_PER_MIN_FIELD_NUMBER: _ClassVar[int]
    account_id: str
    key: ApiKeySummary
    rate_limit_per_min: int
    def __init__(self, account_id: _Optional[str] = ..., key: _Optional[_Union[ApiKeySummary, _Mapping]] = ..., rate_limit_per_min: _Optional[int] = ...) -> None: ...

class ApiKeySummary(_message.Message):
    __slots__ = ("id", "name", "scopes")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...
