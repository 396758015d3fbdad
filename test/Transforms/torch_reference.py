# Generates the PyTorch numbers in GradientCheckTest.cpp (MatchesPyTorchConvBatchNormStep):
# float64 Conv2d -> BatchNorm2d (train) -> ReLU -> MaxPool2d -> Linear, F.cross_entropy.
# Run with the system Python (torch 1.13): /usr/bin/python3 torch_reference.py
import torch, math
torch.set_printoptions(precision=17)
def fill(shape, k):
    n = 1
    for d in shape: n *= d
    return torch.tensor([0.5*math.sin(0.37*i + k) for i in range(n)], dtype=torch.float64).reshape(shape)
conv = torch.nn.Conv2d(2, 3, 3, padding=1).double()
bn = torch.nn.BatchNorm2d(3).double()
fc = torch.nn.Linear(12, 4).double()
with torch.no_grad():
    conv.weight.copy_(fill([3,2,3,3], 1)); conv.bias.copy_(fill([3], 2))
    bn.weight.copy_(1 + fill([3], 3)); bn.bias.copy_(fill([3], 4))
    bn.running_mean.copy_(fill([3], 5)); bn.running_var.copy_(1 + fill([3], 6))
    fc.weight.copy_(fill([4,12], 7)); fc.bias.copy_(fill([4], 8))
x = 2 * fill([2,2,4,4], 9)
labels = torch.tensor([1, 3])
bn.train()
y = fc(torch.flatten(torch.nn.functional.max_pool2d(torch.relu(bn(conv(x))), 2), 1))
loss = torch.nn.functional.cross_entropy(y, labels)
loss.backward()
def arr(t): return ", ".join(repr(float(v)) for v in t.detach().reshape(-1))
print("loss", repr(float(loss)))
for n, p in [("cw", conv.weight), ("cb", conv.bias), ("s", bn.weight), ("o", bn.bias), ("fw", fc.weight), ("fb", fc.bias)]:
    print(n, "{" + arr(p.grad) + "}")
print("rm", "{" + arr(bn.running_mean) + "}")
print("rv", "{" + arr(bn.running_var) + "}")
