import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from messaging.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TemplateCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEMPLATE_CATEGORY_UNSPECIFIED: _ClassVar[TemplateCategory]
    TEMPLATE_CATEGORY_MARKETING: _ClassVar[TemplateCategory]
    TEMPLATE_CATEGORY_UTILITY: _ClassVar[TemplateCategory]
    TEMPLATE_CATEGORY_AUTHENTICATION: _ClassVar[TemplateCategory]

class TemplateStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEMPLATE_STATUS_UNSPECIFIED: _ClassVar[TemplateStatus]
    TEMPLATE_STATUS_ACTIVE: _ClassVar[TemplateStatus]
    TEMPLATE_STATUS_ARCHIVED: _ClassVar[TemplateStatus]
TEMPLATE_CATEGORY_UNSPECIFIED: TemplateCategory
TEMPLATE_CATEGORY_MARKETING: TemplateCategory
TEMPLATE_CATEGORY_UTILITY: TemplateCategory
TEMPLATE_CATEGORY_AUTHENTICATION: TemplateCategory
TEMPLATE_STATUS_UNSPECIFIED: TemplateStatus
TEMPLATE_STATUS_ACTIVE: TemplateStatus
TEMPLATE_STATUS_ARCHIVED: TemplateStatus

class Template(_message.Message):
    __slots__ = ("id", "object", "name", "language", "status", "body", "variables", "flow", "created_at", "category")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    VARIABLES_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    name: str
    language: str
    status: TemplateStatus
    body: str
    variables: _containers.RepeatedCompositeFieldContainer[TemplateVariable]
    flow: TemplateFlow
    created_at: _timestamp_pb2.Timestamp
    category: TemplateCategory
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., name: _Optional[str] = ..., language: _Optional[str] = ..., status: _Optional[_Union[TemplateStatus, str]] = ..., body: _Optional[str] = ..., variables: _Optional[_Iterable[_Union[TemplateVariable, _Mapping]]] = ..., flow: _Optional[_Union[TemplateFlow, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., category: _Optional[_Union[TemplateCategory, str]] = ...) -> None: ...

class TemplateVariable(_message.Message):
    __slots__ = ("name", "required", "example")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    required: bool
    example: str
    def __init__(self, name: _Optional[str] = ..., required: _Optional[bool] = ..., example: _Optional[str] = ...) -> None: ...

class TemplateFlow(_message.Message):
    __slots__ = ("flow_id",)
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    flow_id: str
    def __init__(self, flow_id: _Optional[str] = ...) -> None: ...

class ListTemplatesRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTemplatesResponse(_message.Message):
    __slots__ = ("object", "data", "total", "next_page_token")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Template]
    total: int
    next_page_token: str
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Template, _Mapping]]] = ..., total: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...
